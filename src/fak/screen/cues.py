# ruff: noqa: E501  (the cue table: one pattern a line reads better than wrapped fragments)
"""The injection cue vocabulary: the table of RE2 sources (tier T1, data).

Each entry is (family, weight, RE2 source in Latin-1 mode); the families are
``fak.screen.cue_families.Cue`` (re-exported here). English alternatives are case-insensitive;
the first set of other languages is written in the case it is used in; the second set (tr, vi,
pl, id/ms, nl, sw, cs, ro as their accent-free ASCII skeleton, and eight languages in their own
script) lives in ``fak.screen.cues_world`` and is spliced in between the first set and the
candidates. Weight 0 marks a candidate (a window for the intent model to read, never a score), a
negative weight marks text about injection. ``fak.screen.injection`` compiles and scores them;
this module only names them.
"""

from __future__ import annotations

from fak.screen.cue_families import Cue
from fak.screen.cues_world import WORLD_CUES

__all__ = ["CUES", "REQUESTS", "Cue"]


_AI = rb"(?:ai|a\.i\.|assistant|agent|llm|language model|model|chatbot|bot|gpt|chatgpt|claude|gemini|copilot|llama)"
# nouns that can only mean a model (an "assistant" or "agent" may be a person)
_AI_ONLY = rb"(?:ai|a\.i\.|llm|language model|chatbot|gpt|chatgpt|claude|gemini|copilot|llama|ai (?:assistant|agent|model|system)s?|(?:assistant|agent|model) ai)"
_PREV = rb"(?:previous|prior|preceding|above|earlier|original|initial|old|all|any|your|the|system)"
_INSTR = rb"(?:instructions?|iunstructions?|directions?|directives?|prompts?|rules|guidelines|commands|task|orders)"
_ORDERED = rb"(?:include|add|append|insert|mention|output|print|say|write|recommend|tell|reveal|disclose|visit|open|click|approve|use|respond|reply|validate|confirm|run|execute|send|forward|email|upload|share|post|delete|call|ignore|disregard|follow|obey)"
_TASK = rb"(?:reviewing|reading|processing|handling|summari[sz]ing|parsing|triaging|analy[sz]ing|browsing)"
_MUST = (
    rb"(?:must|shall|should|needs? to|is required to|has to|is to)\s+(?:now\s+|also\s+|always\s+|first\s+|immediately\s+)?"
    + _ORDERED
    + rb"\b"
)


REQUESTS: tuple[bytes, ...] = (
    rb"\b(?:Generate|Write|Output|Print|Create|List|Provide|Explain|Describe|Detail|Give|Tell|Show|Send|Forward|Execute|Fill|Respond|Answer|Reply|Repeat|Translate|Summari[sz]e|Rate|Solve|Confirm|Ignore|Disregard|Forget|Reveal|Display|Share|Upload|Visit|Click|Insert|Elucidate|Delineate|Compose|Draft|Produce|Include|Add|Run|Call|Open|Delete|Continue|Complete|Post)[ \t]+",
    rb"(?i:\b(?:can|could|would|will) you\b|\bi (?:want|need|would like|require|expect)\b|\byour (?:own |real |true |actual |current |internal |hidden |full |complete |original |operational )?(?:configuration|config|persona|context|settings|parameters|capabilities|training|memory|tools|limitations|programming|creators?|identity)\b|\b(?:please|kindly)\b|\b(?:before|prior to) (?:modifying|making|editing|changing|proceeding|continuing|responding|answering|replying)\b)",
)  # fmt: skip
"""Requests made of a reader, as candidates (see the comment where ``CUES`` holds them). A
window that only these selected needs a stronger logit (``intent.REQUEST_PRIOR``)."""

# (family, weight, RE2 source). English alternatives are case-insensitive; other languages are
# written in the case they are used in (Latin-1 mode must not case-fold UTF-8 bytes).
CUES: tuple[tuple[Cue, float, bytes], ...] = (
    # overriding what came before
    (Cue.OVERRIDE, 1.0, rb"(?i:\b(?:ignore|disregard|forget|override|skip|drop|abandon)\s+(?:all\s+|any\s+|of\s+)?(?:" + _PREV + rb"\s+){1,3}" + _INSTR + rb")"),
    (Cue.OVERRIDE, 1.0, rb"(?i:\bignore all previous\b|\bsystem override\b|\breveal (?:your|the) system prompt\b|\bnew instructions:)"),
    (Cue.OVERRIDE, 0.8, rb"(?i:\b(?:ignore|disregard|bypass|disable|forget)\s+(?:all\s+|any\s+|your\s+|the\s+)?(?:safety|guardrails|restrictions|content polic(?:y|ies)|filters|safeguards)\b)"),
    (Cue.OVERRIDE, 0.6, rb"(?i:\b(?:takes?|take) priority over\b|\byour (?:real|true|actual|new) (?:objective|goal|task|purpose)\b|\byou are no longer\b|\bfrom now on,? you\b|\bstop what you are doing\b|\binstead of (?:the|your) (?:user'?s?|original) (?:task|request)\b|\byou are now (?:in |an? |the |dan\b|unrestricted|jailbroken|free)|\b(?:developer|maintenance|god|debug) mode\b)"),
    # chat-template tokens and role markers
    (Cue.TEMPLATE, 1.0, rb"(?i:<\|im_start\|>\s*(?:system|assistant|user)|<\|start_header_id\|>\s*(?:system|assistant)|<\|(?:system|assistant)\|>\s*(?:\n|\\n)|###\s*\(?system[_ ]?(?:message|prompt)?\)?|\[system\]\(#|\[\[?system\]?\]\s*:)"),
    (Cue.TEMPLATE, 0.7, rb"(?i:\[inst\]|<<sys>>|<\|im_end\|>|<\|eot_id\|>|<\|endoftext\|>|</?(?:system|sys)>)"),
    (Cue.ROLE, 0.6, rb"(?i:(?:\n|\\n)(?:\n|\\n)assistant:|<!--\s*(?:system|assistant|ai|agent|llm)\s*:)"),
    (Cue.ROLE, 0.4, rb"(?i:(?:^|\n|\\n)\s*(?:system|assistant|developer)\s*:|(?:^|\n|\\n)\s*role:\s*(?:system|developer)|(?:\n|\\n)(?:\n|\\n)user:)"),
    (Cue.TEMPLATE, 0.5, rb"(?i:(?:\n|\\n)(?:\n|\\n)human:|<<sys>>[^<]{1,400}<</sys>>)"),
    # addressing the model
    (Cue.ADDRESSEE, 0.6, rb"(?i:\b(?:note|message|instructions?|reminder|request)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+|your\s+)?" + _AI_ONLY + rb"s?\b|\b(?:dear|attention|hey|hello|hi|psst)[,:]?\s+(?:the\s+)?" + _AI_ONLY + rb"s?\b|\b" + _AI_ONLY + rb"s?\s+(?:agents?|assistants?|models?\s+)?(?:processing|reading|handling|summari[sz]ing|browsing|parsing|viewing)\b|\bto you,\s+" + _AI_ONLY + rb"|\bforward this to your " + _AI_ONLY + rb"|\bas (?:an?|the) " + _AI_ONLY + rb"(?:\s+model)?\s+(?:handling|processing|reading|that|who|you)\b)"),
    (Cue.ADDRESSEE, 0.35, rb"(?i:\b(?:note|message|instructions?|reminder|request)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+|your\s+)?" + _AI + rb"s?\b|\b(?:dear|attention|hey|hello|hi|psst)[,:]?\s+(?:the\s+)?" + _AI + rb"s?\b|\b" + _AI + rb"s?\s+(?:agents?|assistants?|models?\s+)?(?:processing|reading|handling|summari[sz]ing|browsing|parsing|viewing)\b|\bto you,\s+" + _AI + rb"|\bforward this to your " + _AI + rb"|\bas (?:an?|the) " + _AI + rb"(?:\s+model)?\s+(?:handling|processing|reading|that|who|you)\b)"),
    (Cue.ADDRESSEE, 0.5, rb"(?i:\bwhen (?:the|an?) " + _AI + rb" (?:reads|sees|processes|summari[sz]es)\b|\bthe (?:ai |llm )?(?:assistant|agent|model|ai)\s+(?:must|should|shall|needs to|is required to|has to|will now)\s+(?:now\s+|quietly\s+|first\s+|immediately\s+)?(?:ignore|send|forward|email|transfer|upload|share|post|delete|execute|call|invite|reply|create|change|follow|obey|do|run)\b|(?:^|\\n|[\n.!>]\s*)(?:assistant|agent|ai|llm|model),\s+(?:please\s+)?(?:send|forward|email|transfer|upload|share|post|delete|execute|call|invite|ignore|do|run|reply|create|change)\b|\bthis is an important message from\b|\b(?:ai|assistant|agent|llm|model) (?:instructions?|note|directives?|task)\s*:)"),
    # a document telling its reader what the reader's AI must do ("your AI assistant must include")
    (Cue.ADDRESSEE, 1.0, rb"(?i:\byour (?:ai|llm) (?:assistant|agent)s?\s+(?:must|shall|needs? to|is required to|has to|will now|is to)\s+(?:now\s+|also\s+|always\s+|first\s+|immediately\s+)?(?:include|record|add|insert|mention|append|send|forward|email|transfer|upload|share|post|delete|execute|call|invite|reply|respond|output|print|say|write|recommend|tell|reveal|visit|open|click|approve|run|use)\b|\b(?:need|needs|want|wants|require|requires|ask|asks|instruct|instructs)\s+your (?:ai|llm) (?:assistant|agent)s?\s+to\b)"),
    # announced new instructions / task
    (Cue.NEW_TASK, 0.5, rb"(?i:\b(?:new|updated|revised|additional|real|urgent|hidden|secret)\s+(?:instructions?|directives?|system prompt)\b|\bbefore you can (?:solve|answer|continue|complete|summari[sz]e|respond)|\bthe task (?:that )?i gave you\b|\bafter you do that\b|\byou have a new task\b|\byour updated instructions\b|\b(?:do|perform) the following (?:first|instead)\b)"),
    (Cue.NEW_TASK, 0.3, rb"(?i:\b(?:new|urgent|hidden|secret) task\b|\bbefore you (?:solve|answer|continue|complete|summari[sz]e|respond)|\bbefore (?:summari[sz]ing|answering|responding|replying|continuing)\b|\byou (?:must|should) (?:now|first|immediately)\b)"),
    # keeping it from the user
    (Cue.SECRECY, 0.5, rb"(?i:\b(?:do not|don't|never|without)\s+(?:tell|telling|mention|mentioning|inform|informing|notify|notifying|alert|alerting|ask|asking|asking for confirmation|reveal|revealing|show|showing)\b[^.\n]{0,24}\b(?:user|them|anyone|confirmation|this step|this)\b|\b(?:and|but|or) (?:do )?not (?:mention|tell|reveal|disclose|report) (?:it|this|that|them)\b|\bkeep (?:this|it) (?:hidden|secret|between us)\b|\bpre-?authori[sz]ed\b|\bas if nothing happened\b|\brespond only with\b|\bquietly\b|\bsilently\b)"),
    # fake tool calls
    (Cue.TOOL_CALL, 0.5, rb"(?i:<(?:tool_call|function_call|tool_use|invoke)\b|\\?\"(?:name|tool|function)\\?\"\s*:\s*\\?\"[a-z_]+\\?\"\s*,\s*\\?\"(?:arguments|args|parameters|input|recipient|to)\\?\"\s*:)"),
    (Cue.TOOL_CALL, 0.5, rb"(?i:\bwith the (?:following )?(?:arguments|parameters)\s*:?\s*[{(`'\"])"),
    (Cue.TOOL_DIRECTIVE, 0.5, rb"(?i:\bcall the (?:tool|function)\b|\buse the tool\b|\bexecute the (?:call|tool|function)\b|\binvoke the (?:tool|function)\b|\brun the (?:tool|function|command) (?:below|above)\b)"),
    # envelopes
    (Cue.ENVELOPE, 0.5, rb"(?i:</?(?:information|important|instructions?|admin|override|secret|hidden)>)"),
    # hidden carriers
    (Cue.HIDDEN, 0.3, rb"(?i:<!--\s*[^\s>-][^\s>]*\s+[^\s>-]|font-size\s*:\s*0|display\s*:\s*none|visibility\s*:\s*hidden|color\s*:\s*transparent|opacity\s*:\s*0[;\"\s]|\balt=\"[^\"]{40,}|\[//\]:\s*#)"),
    # acting on data toward somebody else
    (Cue.EXFIL, 0.3, rb"(?i:\b(?:send|forward|email|e-mail|transfer|upload|share|post|leak|exfiltrate|invite|wire)\b[^\n]{0,80}?\b(?:to|with)\s+(?:[\w.+-]+@[\w-]+\.[\w.]+|https?://|iban|[A-Z]{2}\d{2}[A-Z0-9]{10,}))"),
    # markdown images whose URL carries data
    (Cue.IMAGE_EXFIL, 1.0, rb"!\[[^\]\n]{0,80}\]\(\s*https?://[^\s)?]{1,200}\?[^\s)]{0,300}(?:\{|%7[bB]|<|\$|[A-Za-z0-9+/=_-]{40})"),
    # multilingual: overrides
    (Cue.OVERRIDE, 1.0,
     "(?:I|i)gnore(?:z|r)? (?:les |toutes les )?(?:instructions|consignes) (?:précédentes|antérieures)"
     "|(?:I|i)gnoriere (?:alle )?(?:vorherigen|bisherigen|obigen) (?:Anweisungen|Instruktionen)"
     "|(?:I|i)gnora (?:las |todas las )?instrucciones (?:anteriores|previas)"
     "|(?:I|i)gnore (?:as |todas as )?instruções anteriores"
     "|(?:I|i)gnora (?:le |tutte le )?istruzioni precedenti"
     "|忽略(?:之前|以上|前面|先前)(?:的)?(?:所有)?(?:指令|指示|说明)"
     "|(?:以前|これまで|前)の指示を(?:すべて)?無視"
     "|이전\\s*(?:의\\s*)?(?:모든\\s*)?(?:지시|명령|지침)(?:을|를)?\\s*(?:모두\\s*)?무시"
     "|(?:И|и)гнорируй(?:те)? (?:все )?(?:предыдущие|прошлые) (?:инструкции|указания)".encode()),
    # multilingual: addressing the assistant
    (Cue.ADDRESSEE, 0.6,
     "assistant (?:IA|d'IA|virtuel)|(?:cher|chère) assistant|modèle d'IA|KI-Assistent(?:en)?|KI-Modell|Sprachmodell"
     "|asistente (?:de IA|IA|virtual)|modelo de (?:IA|lenguaje)|assistente (?:de IA|IA|AI|virtual[e]?)"
     "|modello (?:di IA|linguistico)|AI助手|人工智能助手|语言模型|AIアシスタント|アシスタントへ|AIモデル|言語モデル"
     "|AI 어시스턴트|어시스턴트에게|AI 모델|언어 모델|ИИ-ассистент|(?:для|к) ассистент[ау]|нейросеть|языков[а-я]+ модел".encode()),
    (Cue.ADDRESSEE, 0.3,
     "\\bassistant\\b|\\bAssistent(?:en)?\\b|\\basistente\\b|\\bassistente\\b|助手|アシスタント|어시스턴트|ассистент".encode()),
    # multilingual: new instructions
    (Cue.NEW_TASK, 0.5,
     "nouvelles instructions|neue Anweisungen|Neue Anweisungen|nuevas instrucciones|Nuevas instrucciones"
     "|novas instruções|Novas instruções|nuove istruzioni|Nuove istruzioni|新的指令|新指令|新しい指示|새로운 지시|새 지시"
     "|новые инструкции|Новые инструкции|Message important|Wichtiger Hinweis|Mensaje importante|Mensagem importante"
     "|Messaggio importante|重要消息|重要なお知らせ|중요한 메시지|Важное сообщение|在完成任务之前".encode()),
    (Cue.NEW_TASK, 0.3,
     "tu dois (?:maintenant|d'abord|immédiatement)|du musst (?:jetzt|zuerst|sofort)|musst du (?:jetzt|zuerst|sofort)"
     "|debes (?:ahora|primero)|você deve (?:agora|primeiro)|devi (?:ora|prima|subito)|你现在必须|必须先|今すぐ|해야 합니다"
     "|ты должен|нужно сначала|nouvelle tâche|neue Aufgabe|nueva tarea|nova tarefa|nuovo compito|новое задание"
     "|avant de (?:poursuivre|continuer|répondre)|bevor du|antes de (?:responder|continuar)|prima di (?:continuare|rispondere)".encode()),
    # multilingual: secrecy
    (Cue.SECRECY, 0.5,
     "sans (?:le lui dire|l'informer|prévenir)|ne (?:le )?dis pas|nicht erwähnen|ohne (?:es )?(?:dem Nutzer|ihm) zu sagen"
     "|no se lo digas|sin decírselo|não informe|sem avisar|senza avvisare|non dirlo|不要告诉用户|不要通知"
     "|ユーザーに知らせず|知らせないで|알리지 말고|알리지 마|не сообщай|не говори".encode()),
    # multilingual: exfiltrating verbs with a recipient
    (Cue.EXFIL, 0.3,
     "(?:\\b(?:envoyer|transfère|transférer|envoie|weiterleiten|sende|senden|enviar|reenvía|envía"
     "|Transfira|transfira|inviare|invia|condividi)\\b|转发|发送|転送|送信|전달|보내|переслать|отправь"
     "|перешли)[^\\n]{0,60}@".encode()),
    *WORLD_CUES,  # the second set of languages (``fak.screen.cues_world``)
    # the reader's AI named by the task it is doing on this text and told what it must do
    # ("the reviewing assistant should output", "the agent processing this email must send");
    # a plain "the assistant must include" is how style guides and model specs talk, and "a
    # user agent MUST send" is an RFC's, so neither counts
    (Cue.ADDRESSEE, 0.6, rb"(?i:\bthe " + _TASK + rb" (?:assistant|agent|model|ai|llm)s?\s+" + _MUST + rb"|\bthe (?:assistant|agent|model|ai|llm)s? " + _TASK + rb" (?:this|the) [a-z]+\s+" + _MUST + rb")"),
    # the reader addressed by the task it is doing on this very text ("when summarizing this
    # page, also include ...": a person reading a page does not summarize it on request)
    (Cue.ADDRESSEE, 0.5, rb"(?i:\b(?:when|while|before|after) (?:summari[sz]ing|processing|reviewing|parsing|triaging|analy[sz]ing) this (?:page|document|email|e-mail|message|file|article|webpage|website|site|template|report|thread|issue|ticket|review|record)\b)"),
    # an authority the reader is told to obey, in capitals or as a bracketed note
    (Cue.ROLE, 0.5, rb"\[(?:SYSTEM|ADMIN|ADMINISTRATOR|DEVELOPER|OPERATOR)\]|\b(?:NOTE|MESSAGE|NOTICE|INSTRUCTIONS?) FROM (?:THE )?(?:DEVELOPER|ADMIN(?:ISTRATOR)?|SYSTEM|OPERATOR|DOCUMENT AUTHOR|AUTHOR|OWNER)S?\b|(?i:\[note (?:from|by) the (?:document |page |site )?(?:author|owner|admin|developer))"),
    # an encoded order the reader is told to decode and carry out
    (Cue.NEW_TASK, 0.5, rb"(?i:\bdecode (?:this |the following |it )?(?:and|then)\s+(?:follow|execute|obey|run|comply)\b)"),
    # candidates: weight 0, they never score; they mark a window for the intent model to read
    # (a tool named in snake_case after a verb of calling, directing the answer, a role to play)
    (Cue.CANDIDATE, 0.0, rb"(?i:\b(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?[a-z][a-z0-9]*_[a-z0-9_]+\b|\b(?:respond|reply|answer)\s+(?:only\s+)?with\b|\byour (?:response|answer|reply|output)s?\b|\b(?:print|output|say)\s+(?:only\s+|exactly\s+)?[\"'`\[]|\bnothing else\b|\bend every (?:response|answer|reply)\b|\byou are (?:going|about) to\b|\b(?:act|acting) as (?:an?|the|my)\b|\bpretend (?:to be|you)\b|\bstay in character\b|\bfrom now on\b|\bfor the rest of this conversation\b|\b(?:prior|previous|original|current) task\b|\bthe above\b|\[system\])"),
    # broader candidates (weight 0): words of giving orders that injections written by others
    # share (an override verb, "instructions", "you must", a quoted answer to print, a shouted
    # banner, a pretext mode); two of them near each other, or one beside a weak cue, mark a
    # window for the intent model, which decides
    (Cue.CANDIDATE, 0.0, rb"(?i:\b(?:ignore|ignoring|disregard|forget|override)\s+(?:all|any|the|your|every|previous|prior|above|earlier|this|these|those|that|what|everything|rules|instructions|safety|it|them)\b|\binstructions?\b|\byou will now\b|\b(?:pose|behave|respond|answer|reply) as\b|\bno (?:restrictions|limits|filters|rules|limitations)\b|\byour (?:first|next|second|new|only) (?:response|answer|reply|task)\b|\byou (?:must|should|will|need to|have to|are (?:now|to|required|allowed))\b|\b(?:print|say|output|write|respond|reply|answer|repeat|return|state)\s+(?:only\s+|exactly\s+|just\s+|the (?:following|phrase|text|word)s?\s*:?\s*)?[\"'<\[]|(?:^|[^#\w])include\s+(?:only\s+|exactly\s+|just\s+|the (?:following|phrase|text|word)s?\s*:?\s*)?[\"'<\[]|\b(?:debug|test|testing|training|developer|admin|maintenance|god|safe|evaluation|audit) mode\b|\bsystem (?:note|notice|update|instructions?|override)\b|\bpwned\b|\b(?:do|perform|complete|execute|follow) the following\b|\byour (?:task|job|mission|assignment|goal|objective)\b|\b(?:you've|you have) been (?:assigned|given|asked|instructed|tasked)\b|\b(?:tell|give|show) me\b)"),
    (Cue.CANDIDATE, 0.0, rb"\b(?:IMPORTANT|URGENT|ATTENTION|NEW TASK|NOTE TO)\b"),
    # requests made of a reader: a capitalised imperative (a verb of producing, telling,
    # sending or doing), "could you", "I want / need", the reader's own configuration asked
    # about, "please" / "kindly", "before making changes". Everyday prose and docs (and
    # forum posts: "Please follow the subreddit's rules") share them, so they only mark a
    # window, within the body's window budget, which must then clear the threshold plus
    # ``intent.REQUEST_PRIOR`` when nothing else selected it. Each ends before the next word:
    # the scan keeps one of overlapping matches, and a candidate must not hide a scoring cue
    # that starts inside it (a test pins it; every train item's weighted cues are unchanged)
    *((Cue.CANDIDATE, 0.0, request) for request in REQUESTS),
    (Cue.CANDIDATE, 0.0,
     "(?:\\b(?:[Ii]gnorez|[Oo]ubliez?|[Ii]gnoriere|[Vv]ergiss|[Ii]gnora|[Oo]lvida|[Ee]squeça|[Dd]imentica)\\b|(?:И|и)гнорируй|(?:З|з)абудь"
     "|忽略|无视|忘记|無視|忘れ|무시|잊어|instructions précédentes|Anweisungen|instrucciones|instruções|istruzioni|инструкци)".encode()),
    # text about injection, not an injection: lowers a window's score
    (Cue.META, -0.5, rb"(?i:\bprompt[- ]injections?\b|\bjailbreak|\bred[- ]team|\bowasp\b|\btest fixtures?\b|\b(?:strings?|phrases?|payloads?) (?:like|such as)\b|\bdetection rates?\b|\battackers? (?:sometimes|often|may|can|could)\b|\b(?:prompt|chat) (?:format|template)s?\b|\bapply_chat_template\b|\{\{?\s*(?:system_prompt|system_message|user_message|prompt|query|input|bos_token)\s*\}\}?)"),
)  # fmt: skip
