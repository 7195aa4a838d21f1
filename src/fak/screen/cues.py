# ruff: noqa: E501  (the cue table: one pattern a line reads better than wrapped fragments)
"""The injection cue vocabulary: families and the table of RE2 sources (tier T1, data).

Each entry is (family, weight, RE2 source in Latin-1 mode). English alternatives are
case-insensitive; the other languages are written in the case they are used in, or (tr, vi, pl,
id/ms, nl, sw, cs, ro) as their accent-free ASCII skeleton. Weight 0 marks a candidate (a window
for the intent model to read, never a score), a negative weight marks text about injection.
``fak.screen.injection`` compiles and scores them; this module only names them.
"""

from __future__ import annotations

import enum

__all__ = ["CUES", "Cue"]


class Cue(enum.StrEnum):
    """Cue families; the values are stable names reported in findings."""

    OVERRIDE = "override"
    ROLE = "role_marker"
    TEMPLATE = "chat_template"
    ADDRESSEE = "addressee"
    NEW_TASK = "new_instructions"
    SECRECY = "secrecy"
    TOOL_CALL = "tool_call"
    TOOL_DIRECTIVE = "tool_directive"
    ENVELOPE = "envelope"
    HIDDEN = "hidden_carrier"
    EXFIL = "exfil_action"
    IMAGE_EXFIL = "image_exfil"
    META = "discussion"
    CANDIDATE = "candidate"


_AI = rb"(?:ai|a\.i\.|assistant|agent|llm|language model|model|chatbot|bot|gpt|chatgpt|claude|gemini|copilot|llama)"
# nouns that can only mean a model (an "assistant" or "agent" may be a person)
_AI_ONLY = rb"(?:ai|a\.i\.|llm|language model|chatbot|gpt|chatgpt|claude|gemini|copilot|llama|ai (?:assistant|agent|model|system)s?|(?:assistant|agent|model) ai)"
_PREV = rb"(?:previous|prior|preceding|above|earlier|original|initial|old|all|any|your|the|system)"
_INSTR = rb"(?:instructions?|iunstructions?|directions?|directives?|prompts?|rules|guidelines|commands|task|orders)"


def _arabic(src: str) -> str:
    """Arabic-script cue source that also matches the other spelling of its letters: Arabic and
    Persian yeh and kaf, alef with or without hamza, final teh marbuta written as heh."""
    return src.translate(_ARABIC_LETTERS)


_ARABIC_LETTERS = str.maketrans({
    "ي": "(?:ي|ی|ى)", "ی": "(?:ی|ي|ى)", "ك": "(?:ك|ک)", "ک": "(?:ک|ك)",
    "أ": "(?:أ|ا)", "إ": "(?:إ|ا)", "ة": "(?:ة|ه)",
})  # fmt: skip

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
    (Cue.ROLE, 0.4, rb"(?i:(?:^|\n|\\n)\s*(?:system|assistant|developer)\s*:|(?:^|\n|\\n)\s*role:\s*(?:system|developer)|(?:\n|\\n)(?:\n|\\n)user:)"),
    (Cue.TEMPLATE, 0.5, rb"(?i:(?:\n|\\n)(?:\n|\\n)human:|<<sys>>[^<]{1,400}<</sys>>)"),
    (Cue.ROLE, 0.6, rb"(?i:(?:\n|\\n)(?:\n|\\n)assistant:|<!--\s*(?:system|assistant|ai|agent|llm)\s*:)"),
    # addressing the model
    (Cue.ADDRESSEE, 0.6, rb"(?i:\b(?:note|message|instructions?|reminder|request)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+|your\s+)?" + _AI_ONLY + rb"s?\b|\b(?:dear|attention|hey|hello|hi|psst)[,:]?\s+(?:the\s+)?" + _AI_ONLY + rb"s?\b|\b" + _AI_ONLY + rb"s?\s+(?:agents?|assistants?|models?\s+)?(?:processing|reading|handling|summari[sz]ing|browsing|parsing|viewing)\b|\bto you,\s+" + _AI_ONLY + rb"|\bforward this to your " + _AI_ONLY + rb"|\bas (?:an?|the) " + _AI_ONLY + rb"(?:\s+model)?\s+(?:handling|processing|reading|that|who|you)\b)"),
    (Cue.ADDRESSEE, 0.35, rb"(?i:\b(?:note|message|instructions?|reminder|request)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+|your\s+)?" + _AI + rb"s?\b|\b(?:dear|attention|hey|hello|hi|psst)[,:]?\s+(?:the\s+)?" + _AI + rb"s?\b|\b" + _AI + rb"s?\s+(?:agents?|assistants?|models?\s+)?(?:processing|reading|handling|summari[sz]ing|browsing|parsing|viewing)\b|\bto you,\s+" + _AI + rb"|\bforward this to your " + _AI + rb"|\bas (?:an?|the) " + _AI + rb"(?:\s+model)?\s+(?:handling|processing|reading|that|who|you)\b)"),
    (Cue.ADDRESSEE, 0.5, rb"(?i:\bwhen (?:the|an?) " + _AI + rb" (?:reads|sees|processes|summari[sz]es)\b|\bthe (?:ai |llm )?(?:assistant|agent|model|ai)\s+(?:must|should|shall|needs to|is required to|has to|will now)\s+(?:now\s+|quietly\s+|first\s+|immediately\s+)?(?:ignore|send|forward|email|transfer|upload|share|post|delete|execute|call|invite|reply|create|change|follow|obey|do|run)\b|(?:^|\\n|[\n.!>]\s*)(?:assistant|agent|ai|llm|model),\s+(?:please\s+)?(?:send|forward|email|transfer|upload|share|post|delete|execute|call|invite|ignore|do|run|reply|create|change)\b|\bthis is an important message from\b|\b(?:ai|assistant|agent|llm|model) (?:instructions?|note|directives?|task)\s*:)"),
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
    (Cue.HIDDEN, 0.3, rb"(?i:<!--|font-size\s*:\s*0|display\s*:\s*none|visibility\s*:\s*hidden|color\s*:\s*transparent|opacity\s*:\s*0[;\"\s]|\balt=\"[^\"]{40,}|\[//\]:\s*#)"),
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
    # second set of languages: tr, vi, pl, id/ms, nl and sw are written as their ASCII skeleton,
    # case-insensitive (the skeleton view, ``fak.screen.skeleton``, takes accents off and reads
    # ı ł đ as i l d; text typed without diacritics reads the same); ar, fa, hi, uk and th in
    # their script (Arabic-script letters with two spellings through ``_arabic``)
    # overrides: a verb dropping earlier instructions (verb-final in tr, fa, hi)
    (Cue.OVERRIDE, 1.0,
     rb"(?i:\b(?:onceki|yukaridaki|daha\s+onceki|tum|butun|verilen)\s+(?:(?:tum|butun|bu|sana\s+verilen|verilen)\s+){0,2}(?:talimat|komut|yonerge|yonlendirme|direktif|emir|kural)\w*\s+(?:(?:tamamen|hemen|simdi)\s+)?(?:yok\s*say|gormezden\s+gel|unut|dikkate\s+alma|gecersiz\s+say)"
     rb"|\b(?:bo\s+qua|phot\s+lo|quen|khong\s+tuan\s+theo|dung\s+tuan\s+theo)\s+(?:(?:di|het|tat\s+ca|toan\s+bo|moi|cac|nhung)\s+){0,3}(?:huong\s+dan|chi\s+dan|chi\s+thi)\b"
     rb"|\b(?:bo\s+qua|phot\s+lo|quen)\s+(?:(?:het|tat\s+ca|toan\s+bo|moi|cac|nhung)\s+){0,3}(?:lenh|quy\s+tac|yeu\s+cau)\s+(?:truoc|phia\s+tren|ben\s+tren|ban\s+dau)\b"
     rb"|\b(?:zignoruj|ignoruj|zapomnij(?:\s+o)?|nie\s+zwracaj\s+uwagi\s+na|pomin)(?:cie)?\s+(?:(?:wszystkie|wszystkich|wszystkim|poprzednie|poprzednich|wczesniejsze|wczesniejszych|powyzsze|powyzszych|dotychczasowe|dotychczasowych|swoje|swoich|te|tych|moje)\s+){0,3}(?:instrukcj|polecen|wytyczn|zasad|regul)\w*"
     rb"|\b(?:abaikan|lupakan|acuhkan|jangan\s+(?:ikuti|hiraukan|pedulikan|patuhi))\s+(?:(?:semua|seluruh|segala|setiap|itu|tersebut)\s+){0,2}(?:instruksi|perintah|arahan|petunjuk|aturan|pedoman)\b"
     rb"|\b(?:negeer|vergeet)\s+(?:(?:alle|al|de|je|jouw|uw|eerdere|vorige|voorgaande|bovenstaande|oorspronkelijke|eerste)\s+){0,3}(?:instructies?|aanwijzingen|opdrachten|richtlijnen|prompts?)\b"
     rb"|\b(?:puuza|puuzia|sahau|usifuate|achana\s+na)\s+(?:(?:yote|zote|kila|haya|hayo)\s+)?(?:maagizo|maelekezo|amri|miongozo)\b)"),
    (Cue.OVERRIDE, 1.0, (_arabic(
     "(?:تجاهل|تجاهلي|تجاهلوا|انس|انسى|انسي|أهمل|أهملي|لا تتبع|لا تلتزم ب)\\s*(?:كل|جميع)?\\s*(?:التعليمات|الأوامر|الإرشادات|التوجيهات|القواعد|تعليماتك|أوامرك)"
     "|(?:دستورات|دستورالعمل|دستورها|قوانین|قواعد|راهنمایی|رهنمود)[^\\n.]{0,60}(?:نادیده|فراموش کن|توجه نکن|کنار بگذار)")
     + "|(?:निर्देश|आदेश|नियम)(?:ों)?(?:\\s+को)?\\s+(?:अनदेखा|न(?:ज़|ज़|ज)र\\s*अंदा(?:ज़|ज़|ज)|भूल\\s+जा|ध्यान\\s+न)"
     "|(?:(?:І|і)гноруй|(?:П|п)роігноруй|(?:З|з)абудь|(?:Н|н)е\\s+зважай|(?:З|з)нехтуй)(?:те)?(?:\\s+на)?\\s+(?:(?:всі|усі|всіма|попередні|попередніми|минулі|вищезазначені|свої|ці)\\s+){0,3}(?:інструкц|вказів|настанов|правил|команд)"
     "|(?:เพิกเฉย|ไม่ต้องสนใจ|ละเว้น|ลืม|ไม่สนใจ)(?:ต่อ|กับ)?\\s*(?:ทุก)?\\s*(?:คำสั่ง|คำแนะนำ)[^\\n]{0,45}(?:ก่อนหน้า|ข้างต้น|เดิม|ทั้งหมด)").encode()),
    (Cue.OVERRIDE, 0.8,
     rb"(?i:\bsistem\s+(?:istem|komut|talimat|mesaj)\w*\s+(?:\w+\s+)?(?:goster|acikla|ifsa\s+et|paylas|yazdir|tekrarla)"
     rb"|\b(?:tiet\s+lo|hien\s+thi|in\s+ra)\s+(?:\w+\s+)?(?:loi\s+nhac|prompt|chi\s+dan|huong\s+dan)\s+he\s+thong"
     rb"|\b(?:ujawnij|pokaz|wypisz|powtorz)\s+(?:\w+\s+)?(?:prompt|instrukcj\w*|komunikat)\s+systemow\w*"
     rb"|\b(?:tampilkan|ungkapkan|bocorkan|tunjukkan|ulangi)\s+(?:prompt|pesan|instruksi)\s+sistem"
     rb"|\b(?:toon|onthul|herhaal|geef)\s+(?:\w+\s+)?(?:systeemprompt|systeem-prompt|systeeminstructies)"
     rb"|\b(?:onyesha|fichua|rudia)\s+(?:maagizo|ujumbe|kidokezo)\s+(?:ya|wa|cha)\s+mfumo)"),
    (Cue.OVERRIDE, 0.8, (_arabic(
     "(?:اكشف|أظهر|اعرض|اطبع|كرر|شارك)\\s+(?:لي\\s+)?(?:موجه|تعليمات|رسالة)\\s+النظام"
     "|(?:پرامپت|دستورات|پیام|اعلان)\\s+سیستم[^\\n.]{0,30}(?:نشان بده|فاش کن|بنویس|تکرار کن)")
     + "|सिस्टम\\s+(?:प्रॉम्प्ट|प्रोम्प्ट|संदेश|निर्देश)[^\\n।]{0,30}(?:दिखा|बता|प्रकट)"
     "|(?:(?:П|п)окажи|(?:Р|р)озкрий|(?:В|в)иведи|(?:П|п)овтори)\\s+(?:свій\\s+|свою\\s+|свої\\s+)?системн"
     "|(?:เปิดเผย|แสดง)(?:ข้อความ|พรอมต์|คำสั่ง)ระบบ").encode()),
    # a new role or goal, as the English 0.6 overrides above ("from now on, you", "you are no
    # longer", "your real task", "developer mode")
    (Cue.OVERRIDE, 0.6,
     rb"(?i:\b(?:bundan\s+(?:sonra|boyle)|su\s+andan\s+itibaren),?\s+sen\b|\bartik\s+(?:bir\s+)?(?:yapay\s+zeka|asistan|dil\s+modeli)\s+degilsin\b|\b(?:gercek|asil|yeni)\s+gorevin\b|\bgelistirici\s+modu"
     rb"|\btu\s+bay\s+gio,?\s+ban\b|\bban\s+khong\s+con\s+la\b|\bnhiem\s+vu\s+(?:that\s+su|thuc\s+su)\s+cua\s+ban\b|\bche\s+do\s+nha\s+phat\s+trien\b"
     rb"|\bod\s+teraz\s+(?:jestes|bedziesz|masz)\b|\bnie\s+jestes\s+juz\s+(?:asystent|modelem|ai)\w*|\btwoje\s+(?:prawdziwe|nowe)\s+zadanie\b|\btryb\s+(?:dewelopera|programisty|debugowania)\b"
     rb"|\bmulai\s+(?:sekarang|saat\s+ini),?\s+(?:kamu|anda)\b|\b(?:kamu|anda)\s+bukan\s+lagi\b|\btugas\s+(?:kamu|anda)\s+yang\s+sebenarnya\b|\bmode\s+pengembang\b"
     rb"|\bvanaf\s+nu\s+(?:ben\s+je|ben\s+jij|moet\s+je|zul\s+je)\b|\bje\s+bent\s+niet\s+langer\b|\bje\s+(?:echte|werkelijke|nieuwe)\s+taak\b|\bontwikkelaarsmodus\b"
     rb"|\bkuanzia\s+sasa,?\s+(?:wewe|u)\b|\bwewe\s+si\s+tena\b|\bkazi\s+yako\s+halisi\b|\bhali\s+ya\s+msanidi\b)|"
     + (_arabic("من الآن فصاعدا،?\\s*(?:أنت|انت)|لم تعد مساعد|مهمتك الحقيقية|وضع المطور"
     "|از این به بعد،?\\s*(?:تو|شما)|دیگر دستیار نیستی|وظیفه واقعی (?:تو|شما)|حالت توسعه\u200c?\\s?دهنده")
     + "|अब\\s+से\\s+(?:तुम|आप)|(?:तुम्हारा|आपका)\\s+असली\\s+काम|डेवलपर\\s+मोड"
     "|(?:В|в)і(?:дтепер|днині),?\\s+(?:ти|ви)|(?:Т|т)и\\s+більше\\s+не\\s+(?:асистент|модель|ШІ)|(?:Т|т)воє\\s+справжнє\\s+завдання|(?:Р|р)ежим\\s+розробника"
     "|ต่อจากนี้ไป\\s*คุณ|งานที่แท้จริงของคุณ|โหมดนักพัฒนา").encode()),
    # addressing the assistant
    (Cue.ADDRESSEE, 0.6,
     rb"(?i:\byapay\s+zeka\s+(?:asistan|model)\w*|\bdil\s+model\w*|\b(?:sevgili|degerli)\s+(?:yapay\s+zeka|asistan)"
     rb"|\btro\s+ly\s+(?:ai|ao|tri\s+tue\s+nhan\s+tao)\b|\bmo\s+hinh\s+(?:ai|ngon\s+ngu)\b"
     rb"|\basystencie\b|\basystent\w*\s+ai\b|\bmodel\w*\s+(?:ai|jezykow\w*)\b"
     rb"|\b(?:asisten|pembantu)\s+(?:ai|kecerdasan\s+buatan)\b|\bmodel\s+bahasa\b"
     rb"|\bai-(?:assistent|model)\b|\btaalmodel\w*|\bbeste\s+(?:ai|assistent)\b"
     rb"|\bmsaidizi\s+wa\s+(?:ai|akili\s+bandia)\b|\bmodeli\s+ya\s+lugha\b)|"
     + (_arabic("مساعد الذكاء الاصطناعي|المساعد الذكي|نموذج الذكاء الاصطناعي|نموذج اللغة|النموذج اللغوي|أيها المساعد|أيها النموذج"
     "|دستیار هوش مصنوعی|مدل هوش مصنوعی|مدل زبانی|ای دستیار")
     + "|(?:एआई|AI)\\s+(?:सहायक|मॉडल)|भाषा\\s+मॉडल|प्रिय\\s+सहायक"
     "|ШІ-асистент|ШІ\\s+асистент|(?:А|а)систенте|мовн(?:а|ої|у)\\s+модел|модель\\s+ШІ"
     "|ผู้ช่วย\\s*(?:AI|เอไอ|ปัญญาประดิษฐ์)|โมเดลภาษา|โมเดล\\s*(?:AI|เอไอ)").encode()),
    (Cue.ADDRESSEE, 0.3,
     rb"(?i:\basistan\w*|\btro\s+ly\b|\basystent\w*|\bmsaidizi\b|\bassistent\b)|"
     + (_arabic("المساعد|دستیار") + "|सहायक|(?:А|а)систент|ผู้ช่วย").encode()),
    # announced new instructions or task
    (Cue.NEW_TASK, 0.5,
     rb"(?i:\byeni\s+(?:talimat|yonerge)\w*|\bonemli\s+mesaj\b|\b(?:huong\s+dan|chi\s+thi)\s+moi\b|\btin\s+nhan\s+quan\s+trong\b"
     rb"|\bnowe\s+(?:instrukcje|wytyczne)\b|\bwazna\s+wiadomosc\b|\b(?:instruksi|arahan)\s+baru\b|\bpesan\s+penting\b"
     rb"|\bnieuwe\s+instructies\b|\bbelangrijk\s+bericht\b|\b(?:maagizo|maelekezo)\s+mapya\b|\bujumbe\s+muhimu\b)|"
     + (_arabic("تعليمات جديدة|التعليمات الجديدة|أوامر جديدة|رسالة مهمة|رسالة هامة|دستورات جدید|دستورالعمل جدید|دستورالعمل\u200cهای جدید|پیام مهم")
     + "|न(?:ए|ये|या)\\s+निर्देश|महत्वपूर्ण\\s+संदेश|(?:Н|н)ові\\s+(?:інструкції|вказівки)|(?:В|в)ажливе\\s+повідомлення|ข้อความสำคัญ|คำแนะนำใหม่").encode()),
    (Cue.NEW_TASK, 0.3,
     rb"(?i:\byeni\s+gorev\w*|\b(?:yanit|cevap)\w*\s+vermeden\s+once\b|\bnhiem\s+vu\s+moi\b|\bbay\s+gio\s+ban\s+phai\b|\btruoc\s+khi\s+tra\s+loi\b"
     rb"|\bnowe\s+zadanie\b|\bmusisz\s+(?:teraz|najpierw|natychmiast)\b|\bzanim\s+odpowiesz\b|\btugas\s+baru\b|\b(?:kamu|anda)\s+harus\s+(?:sekarang|terlebih\s+dahulu|segera)\b"
     rb"|\bsebelum\s+menjawab\b|\bnieuwe\s+opdracht\b|\b(?:je|u)\s+moet\s+(?:nu|eerst|onmiddellijk)\b|\bvoordat\s+je\s+(?:antwoordt|verder\s+gaat)\b"
     rb"|\bkazi\s+mpya\b|\blazima\s+sasa\b|\bsasa\s+lazima\b|\bkabla\s+ya\s+kujibu\b)|"
     + (_arabic("مهمة جديدة|يجب عليك الآن|يجب عليك أولا|عليك الآن أن|قبل أن تجيب|قبل الإجابة|وظیفه جدید|اکنون باید|باید ابتدا|قبل از پاسخ")
     + "|नया\\s+(?:कार्य|काम)|(?:अब|पहले)\\s+(?:तुम्हें|आपको)|(?:जवाब|उत्तर)\\s+देने\\s+से\\s+पहले"
     "|(?:Н|н)ове\\s+завдання|ти\\s+(?:повинен|повинна|маєш)\\s+(?:зараз|спочатку|негайно)|перш\\s+ніж\\s+відповісти|งานใหม่|คุณต้อง|ก่อนตอบ").encode()),
    # keeping it from the user
    (Cue.SECRECY, 0.5,
     rb"(?i:\bkullaniciya\s+(?:hicbir\s+sey\s+|bundan\s+|bunu\s+)?(?:soyleme|bildirme|haber\s+verme|bahsetme)\w*|\bkullaniciyi\s+(?:bilgilendirme|uyarma)\w*|\bkimseye\s+(?:soyleme|bahsetme)\w*"
     rb"|\b(?:khong|dung)\s+(?:duoc\s+)?(?:noi|bao|tiet\s+lo|cho\s+biet)\s+(?:cho|voi)\s+nguoi\s+dung\b|\bma\s+khong\s+(?:bao|noi)\s+(?:cho|voi)\s+nguoi\s+dung\b"
     rb"|\bnie\s+(?:mow|informuj|wspominaj|powiadamiaj|mowiac)\w*\s+(?:o\s+tym\s+)?uzytkownik\w*|\bbez\s+(?:wiedzy|informowania|powiadamiania)\s+uzytkownik\w*|\bnikomu\s+nie\s+mow\b"
     rb"|\bjangan\s+(?:beri\s*tahu|bilang|katakan|memberitahu|beritahu|kasih\s+tahu)\s+(?:kepada\s+|ke\s+)?pengguna\b|\btanpa\s+(?:memberi\s*tahu|sepengetahuan|memberitahu)\s+pengguna\b"
     rb"|\b(?:vertel|zeg|meld)\s+(?:het\s+|dit\s+)?niet\s+(?:aan\s+)?de\s+gebruiker\b|\bzonder\s+(?:het\s+)?de\s+gebruiker\s+(?:hierover\s+|daarover\s+)?(?:te\s+)?(?:informeren|vertellen|melden)|\bzonder\s+dat\s+de\s+gebruiker\b|\bvertel\s+het\s+aan\s+niemand\b"
     rb"|\busimwambie\s+(?:mtumiaji|mtu\s+yeyote)\b|\bbila\s+(?:kumwambia|kumjulisha)\s+mtumiaji\b|\busimjulishe\s+mtumiaji\b|\bbila\s+mtumiaji\s+kujua\b)|"
     + (_arabic("لا تخبر المستخدم|لا تخبري المستخدم|دون إخبار المستخدم|بدون إخبار المستخدم|دون علم المستخدم|لا تعلم المستخدم|لا تخبر أحدا"
     "|به کاربر نگو|به کاربر چیزی نگو|به کاربر اطلاع نده|بدون اطلاع کاربر|بدون اینکه به کاربر|به کسی نگو")
     + "|(?:उपयोगकर्ता|यूज़र|यूजर)\\s+को\\s+(?:(?:मत|न|ना)\\s+बता|बताए\\s+बिना)|किसी\\s+को\\s+(?:मत|न)\\s+बता"
     "|(?:Н|н)е\\s+(?:кажи|повідомляй|розповідай|говори)\\s+(?:про\\s+це\\s+)?користувач|(?:Б|б)ез\\s+відома\\s+користувача|(?:Н|н)ікому\\s+не\\s+(?:кажи|розповідай)"
     "|(?:อย่า|ไม่ต้อง)(?:บอก|แจ้ง)(?:ให้)?ผู้ใช้|โดยไม่(?:บอก|แจ้ง)(?:ให้)?ผู้ใช้|อย่าบอกใคร").encode()),
    # exfiltrating verbs with a recipient (tr and fa name the recipient first)
    (Cue.EXFIL, 0.3,
     rb"(?i:\b(?:gonder|ilet|yolla|gui\s+(?:cho|den|toi|qua)|chuyen\s+tiep|wyslij|przeslij|przekaz|kirim|kirimkan|teruskan|stuur|verstuur|doorsturen|tuma|peleka)\w*\b[^\n]{0,60}@"
     rb"|@[\w-]+(?:\.[\w-]+)+\S{0,3}\s+adresine\s+(?:gonder|ilet|yolla))|"
     + (_arabic("(?:أرسل|ارسل|أرسلي|حول|انقل|شارك|أعد توجيه)[^\\n]{0,60}@|@[\\w-]+(?:\\.[\\w-]+)+\\s*(?:را\\s+)?(?:بفرست|ارسال کن|فوروارد کن)")
     + "|(?:भेजें|भेजो|फॉरवर्ड\\s+करें|(?:Н|н)адішл|(?:П|п)ерешл|(?:В|в)ідправ|ส่ง)[^\\n]{0,60}@|@[\\w-]+(?:\\.[\\w-]+)+\\s*(?:पर|को)\\s+(?:भेज|फॉरवर्ड)").encode()),
    # and cs, ro (as their ASCII skeleton), el, he, bn (in their script), family by family
    (Cue.OVERRIDE, 1.0,
     rb"(?i:\b(?:ignoruj(?:te)?|zapomen(?:te)?\s+na|nedbej(?:te)?|neber(?:te)?\s+ohled\s+na)\s+(?:(?:vsechny|vsechno|veskere|predchozi|predesle|dosavadni|sve|tyto)\s+){0,3}(?:instrukce|pokyny|prikazy|pravidla)\b"
     rb"|\b(?:ignora(?:ti)?|uita(?:ti)?|nu\s+(?:mai\s+)?tine(?:ti)?\s+cont\s+de)\s+(?:(?:toate|tot)\s+)?(?:instructiunile|indicatiile|comenzile|regulile)\b)|"
     + ("(?:(?:Α|α)γνόησε|(?:Α|α)γνοήστε|(?:Ξ|ξ)έχασε|(?:Ξ|ξ)εχάστε)\\s+(?:όλες\\s+)?(?:τις\\s+)?(?:προηγούμενες\\s+|παραπάνω\\s+|αρχικές\\s+)?(?:οδηγίες|εντολές|κανόνες)"
     "|(?:התעלם|התעלמי|התעלמו)\\s+(?:מכל\\s+|מ)ה(?:הוראות|הנחיות|כללים)|(?:שכח|שכחי|שכחו)\\s+(?:את\\s+)?(?:כל\\s+)?ה(?:הוראות|הנחיות|כללים)"
     "|(?:নির্দেশনা|নির্দেশ|নির্দেশাবলী)\\S*\\s+(?:উপেক্ষা|অগ্রাহ্য|ভুলে\\s+যা)").encode()),
    (Cue.OVERRIDE, 0.8,
     rb"(?i:\b(?:ukaz|odhal|vypis|zopakuj)\w*\s+(?:\w+\s+)?systemov\w*\s+(?:prompt|pokyny|zpravu|instrukce)"
     rb"|\b(?:arata|dezvaluie|afiseaza|repeta)\w*\s+(?:\w+\s+)?(?:promptul|mesajul|instructiunile)\s+(?:de\s+)?sistem\w*)|"
     + ("(?:(?:Δ|δ)είξε|(?:Α|α)ποκάλυψε|(?:Ε|ε)πανάλαβε)\\s+(?:μου\\s+)?(?:το\\s+|τις\\s+)?(?:μήνυμα|prompt|οδηγίες)\\s+(?:του\\s+)?συστήματος"
     "|(?:הצג|חשוף|הראה|חזור על)\\s+(?:את\\s+)?(?:ה)?(?:הנחיית|הודעת|פרומפט|הוראות)\\s+(?:ה)?מערכת"
     "|সিস্টেম\\s+(?:প্রম্পট|বার্তা|নির্দেশ)\\S*\\s+(?:দেখাও|প্রকাশ)").encode()),
    (Cue.OVERRIDE, 0.6,
     rb"(?i:\bod\s+ted,?\s+(?:jsi|budes)\b|\brezim\s+vyvojare\b|\buz\s+nejsi\s+(?:asistent|ai|model)|\btvuj\s+skutecny\s+ukol\b"
     rb"|\bde\s+acum\s+(?:inainte|incolo),?\s+(?:esti|vei)\b|\bmodul\s+(?:de\s+)?dezvoltator\b|\bnu\s+mai\s+esti\s+(?:un\s+)?(?:asistent|model)|\badevarata\s+ta\s+sarcina\b)|"
     + ("(?:Α|α)πό\\s+(?:τώρα|εδώ)\\s+και\\s+(?:στο\\s+εξής|πέρα),?\\s+(?:είσαι|θα)|λειτουργία\\s+προγραμματιστή|δεν\\s+είσαι\\s+πλέον"
     "|מעכשיו\\s+(?:אתה|את)\\b|מצב\\s+מפתח|אתה\\s+כבר\\s+לא\\s+(?:עוזר|מודל)"
     "|এখন\\s+থেকে\\s+(?:তুমি|আপনি)|ডেভেলপার\\s+মোড").encode()),
    (Cue.ADDRESSEE, 0.6,
     rb"(?i:\basistente\s+ai\b|\bai\s+asistent\w*|\bjazykov\w*\s+model\w*|\b(?:mily|mila|vazeny)\s+asistente\b"
     rb"|\basistent(?:ul|ule)?\s+(?:ai|virtual)\b|\bmodel(?:ul)?\s+(?:ai|de\s+limbaj)\b|\b(?:dragule|stimate)\s+asistent\w*)|"
     + ("βοηθ(?:έ|ός)\\s+τεχνητής\\s+νοημοσύνης|γλωσσικό\\s+μοντέλο|μοντέλο\\s+τεχνητής\\s+νοημοσύνης|(?:Α|α)γαπητέ\\s+βοηθέ"
     "|עוזר\\s+(?:ה)?בינה\\s+(?:ה)?מלאכותית|מודל\\s+(?:ה)?שפה|עוזר\\s+AI|(?:ה)?עוזר\\s+(?:ה)?וירטואלי"
     "|(?:এআই|AI)\\s+সহকারী|ভাষা\\s+মডেল").encode()),
    (Cue.ADDRESSEE, 0.3, rb"(?i:\basistent(?:e|ovi|a|ko|ul|ule|ului)?\b)|" + "βοηθ(?:ός|έ|ού)|সহকারী".encode()),
    (Cue.NEW_TASK, 0.5,
     rb"(?i:\bnove\s+(?:instrukce|pokyny)\b|\bdulezita\s+zprava\b|\binstructiuni\s+noi\b|\bnoi(?:le)?\s+instructiuni\b|\bmesaj\s+important\b)|"
     + ("νέες\\s+οδηγίες|(?:Σ|σ)ημαντικό\\s+μήνυμα|הוראות\\s+חדשות|הודעה\\s+חשובה|নতুন\\s+নির্দেশ|গুরুত্বপূর্ণ\\s+বার্তা").encode()),
    (Cue.NEW_TASK, 0.3,
     rb"(?i:\bnovy\s+ukol\b|\bnyni\s+musis\b|\bmusis\s+(?:nejprve|nejdriv|ihned)\b|\bnez\s+odpovis\b|\bsarcina\s+noua\b|\btrebuie\s+(?:acum|mai\s+intai|imediat)\b|\binainte\s+de\s+a\s+raspunde\b)|"
     + ("νέα\\s+εργασία|πρέπει\\s+(?:τώρα|πρώτα)|πριν\\s+απαντήσεις|משימה\\s+חדשה|עליך\\s+(?:כעת|קודם|מיד)|לפני\\s+שתענה|নতুন\\s+কাজ|উত্তর\\s+দেওয়ার\\s+আগে").encode()),
    (Cue.SECRECY, 0.5,
     rb"(?i:\bnerikej(?:te)?\s+(?:to\s+|nic\s+)?uzivatel\w*|\bneinformuj(?:te)?\s+uzivatel\w*|\bbez\s+vedomi\s+uzivatel\w*|\bnikomu\s+to\s+nerikej\b"
     rb"|\bnu\s+(?:ii\s+)?spune(?:ti)?\s+(?:nimic\s+)?utilizatorului\b|\bfara\s+(?:a\s+)?(?:informa|anunta|spune)\s+utilizator\w*|\bfara\s+stirea\s+utilizatorului\b)|"
     + ("μην\\s+(?:το\\s+)?(?:πεις|αναφέρεις|ενημερώσεις)\\s+(?:στον\\s+|τον\\s+)?χρήστη|χωρίς\\s+να\\s+(?:το\\s+)?(?:πεις|ενημερώσεις)\\s+(?:στον\\s+|τον\\s+)?χρήστη"
     "|אל\\s+(?:תספר|תגלה|תודיע)\\s+(?:ל)?משתמש|בלי\\s+לספר\\s+למשתמש|מבלי\\s+ליידע\\s+את\\s+המשתמש|אל\\s+תספר\\s+לאף\\s+אחד"
     "|ব্যবহারকারীকে\\s+(?:কিছু\\s+)?(?:বলবে\\s+না|জানাবে\\s+না|বলো\\s+না|জানিও\\s+না)|ব্যবহারকারীকে\\s+না\\s+(?:জানিয়ে|বলে)").encode()),
    (Cue.EXFIL, 0.3,
     rb"(?i:\b(?:posli|preposli|odesli|trimite|redirectioneaza)\w*\b[^\n]{0,60}@)|"
     + ("(?:(?:Σ|σ)τείλε|(?:Π|π)ροώθησε|שלח|העבר)[^\\n]{0,60}@|@[\\w-]+(?:\\.[\\w-]+)+\\s*(?:এ|তে)?\\s+(?:পাঠাও|পাঠান)").encode()),
    # candidates: weight 0, they never score; they mark a window for the intent model to read
    # (a tool named in snake_case after a verb of calling, directing the answer, a role to play)
    (Cue.CANDIDATE, 0.0, rb"(?i:\b(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?[a-z][a-z0-9]*_[a-z0-9_]+\b|\b(?:respond|reply|answer)\s+(?:only\s+)?with\b|\byour (?:response|answer|reply|output)s?\b|\b(?:print|output|say)\s+(?:only\s+|exactly\s+)?[\"'`\[]|\bnothing else\b|\bend every (?:response|answer|reply)\b|\byou are (?:going|about) to\b|\b(?:act|acting) as (?:an?|the|my)\b|\bpretend (?:to be|you)\b|\bstay in character\b|\bfrom now on\b|\bfor the rest of this conversation\b|\b(?:prior|previous|original|current) task\b|\bthe above\b|\[system\])"),
    # broader candidates (weight 0): words of giving orders that injections written by others
    # share (an override verb, "instructions", "you must", a quoted answer to print, a shouted
    # banner, a pretext mode); two of them near each other, or one beside a weak cue, mark a
    # window for the intent model, which decides
    (Cue.CANDIDATE, 0.0, rb"(?i:\b(?:ignore|ignoring|disregard|forget|override)\s+(?:all|any|the|your|every|previous|prior|above|earlier|this|these|those|that|what|everything|rules|instructions|safety|it|them)\b|\binstructions?\b|\byou will now\b|\b(?:pose|behave|respond|answer|reply) as\b|\bno (?:restrictions|limits|filters|rules|limitations)\b|\byour (?:first|next|second|new|only) (?:response|answer|reply|task)\b|\byou (?:must|should|will|need to|have to|are (?:now|to|required|allowed))\b|\b(?:print|say|output|write|respond|reply|answer|repeat|include|return|state)\s+(?:only\s+|exactly\s+|just\s+|the (?:following|phrase|text|word)s?\s*:?\s*)?[\"'<\[]|\b(?:debug|test|testing|training|developer|admin|maintenance|god|safe|evaluation|audit) mode\b|\bsystem (?:note|notice|update|instructions?|override)\b|\bpwned\b|\b(?:please|kindly)\s+(?:do|execute|perform|run|complete|follow|carry out|proceed)\b|\b(?:do|perform|complete|execute|follow) the following\b|\byour (?:task|job|mission|assignment|goal|objective)\b|\b(?:you've|you have) been (?:assigned|given|asked|instructed|tasked)\b|\b(?:tell|give|show) me\b)"),
    (Cue.CANDIDATE, 0.0, rb"\b(?:IMPORTANT|URGENT|ATTENTION|NEW TASK|NOTE TO)\b"),
    (Cue.CANDIDATE, 0.0,
     "(?:\\b(?:[Ii]gnorez|[Oo]ubliez?|[Ii]gnoriere|[Vv]ergiss|[Ii]gnora|[Oo]lvida|[Ee]squeça|[Dd]imentica)\\b|(?:И|и)гнорируй|(?:З|з)абудь"
     "|忽略|无视|忘记|無視|忘れ|무시|잊어|instructions précédentes|Anweisungen|instrucciones|instruções|istruzioni|инструкци)".encode()),
    # text about injection, not an injection: lowers a window's score
    (Cue.META, -0.5, rb"(?i:\bprompt[- ]injections?\b|\bjailbreak|\bred[- ]team|\bowasp\b|\btest fixtures?\b|\b(?:strings?|phrases?|payloads?) (?:like|such as)\b|\bdetection rates?\b|\battackers? (?:sometimes|often|may|can|could)\b|\b(?:prompt|chat) (?:format|template)s?\b|\bapply_chat_template\b|\{\{?\s*(?:system_prompt|system_message|user_message|prompt|query|input|bos_token)\s*\}\}?)"),
)  # fmt: skip
