# ruff: noqa: E501  (lexicon tables: one concept a line, in ten scripts)
"""A small learned reader of intent: does a window of text give orders to the model? (tier T1)

The cue scorer (``fak.screen.injection``) knows phrasings. This model knows concepts: each
window is described by which concepts its sentences hold — an addressee that is the model, the
reader as "you", an imperative at a sentence start, instructions / rules / prompts, disregarding
what came before, something new instead, controlling the answer, acting on data, a role to
play, secrecy, leaking the system prompt, urgency, exfiltration-shaped links — in en, fr, de,
es, pt, it, zh, ja, ko and ru, and which of them meet in one sentence; and by what marks text
as *about* injection or as code or narrative; by the shape of its sentences over coarse word
classes (``class_grams``: "you must print", ". override w instr" in any wording); and by its
words and word pairs (``grams``). A logistic regression (``benchmarks/screen_train.py``, fitted
on the train sources of the by-source corpus and on generated text only; the average of a
model over everything and one over concepts and word classes only) weighs them; the weights
ship as ``intent_weights.json.gz`` with their provenance.
It runs only on candidate windows: the cues the first-match screen's RE2 pass already finds
(``fak.screen.injection``, including weight-0 candidate cues) that did not reach the cue
threshold; a body without cues costs nothing more. Pure; nothing is downloaded; spans only.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import re2

from fak.screen.cues import REQUESTS
from fak.screen.scope import current

__all__ = [
    "CONCEPTS",
    "CONTEXT_FEATURES",
    "WINDOW",
    "IntentHit",
    "IntentModel",
    "candidate_groups",
    "class_grams",
    "context",
    "describe",
    "features",
    "grams",
    "load_model",
    "read_windows",
    "score",
    "window_of",
]

WEIGHTS = "intent_weights.json.gz"
WINDOW = 700
"""Bytes one window reads at least; cues closer than this to a run's first cue share a window."""
_BEFORE = 200  # a window starts this far before its first cue

# Concept lexicons over lower-cased text, compiled for RE2 by ``_re2_source`` (non-ASCII words
# are bounded by non-letters there); CJK entries have no word boundaries.
CONCEPTS: dict[str, str] = {
    "ai": r"\b(?:ai|a\.i\.|assistant|chatbot|bot|llm|llms|language model|gpt|chatgpt|claude|gemini|copilot|llama|agent|model|ia|modèle|ki|assistent|sprachmodell|modell|asistente|modelo|assistente|modello|ассистент|ии|модель|нейросеть|бот)\b|助手|人工智能|模型|アシスタント|モデル|어시스턴트|모델|인공지능",
    "you": r"\b(?:you|your|yours|yourself|you're|you'll|u|tu|vous|votre|vos|ton|ta|tes|toi|du|dich|dir|dein|deine|deinen|tú|usted|tus|te|você|voce|seu|sua|ti|tuo|tua|tuoi|ты|тебе|тебя|твой|твои|вы|вам|ваш)\b|你|您|あなた|당신|너는",
    "instr": r"\b(?:instructions?|prompts?|rules|guidelines|directions|directives?|commands|orders|task|guidance|polic(?:y|ies)|constraints|restrictions|filters?|safety|consignes|règles|tâche|anweisungen?|regeln|richtlinien|aufgabe|befehle|vorgaben|instrucciones|reglas|directrices|tarea|órdenes|instruções|regras|diretrizes|tarefa|ordens|istruzioni|regole|compito|ordini|инструкци[яиюй]|указания|правила|промпт|задани[ея]|команды)\b|指令|指示|规则|提示|任务|ルール|命令|プロンプト|タスク|지시|지침|명령|규칙|프롬프트|작업",
    "override": r"\b(?:ignore|ignoring|disregard|forget|override|bypass|skip|abandon|discard|neglect|nevermind|never mind|cancel|ignorez|oublie|oubliez|contourne|ignoriere|ignorieren|vergiss|vergessen|missachte|übergehe|ignora|olvida|olvide|omite|descarta|esqueça|esqueca|desconsidere|dimentica|trascura|ignorare|игнорируй|игнорировать|забудь|проигнорируй)\b|忽略|忽视|无视|忘记|無視|忘れ|무시|잊어",
    "prior": r"\b(?:previous|prior|preceding|above|earlier|original|initial|foregoing|précédentes?|antérieures|ci-dessus|vorherigen|bisherigen|obigen|vorigen|früheren|anteriores|previas|anterior|prévias|precedenti|предыдущие|прошлые|вышеуказанные)\b|之前|以上|先前|前面|以前|これまで|上記|이전|위의",
    "new": r"\b(?:instead|new|now|from now on|henceforth|rather|updated|only|nothing else|actual|real|nouvelles?|nouveau|maintenant|désormais|plutôt|neue|jetzt|stattdessen|sofort|zuerst|nuevas?|nuevo|ahora|novas?|agora|nuove|ora|adesso|invece|новые|теперь|вместо|сейчас)\b|新的|现在|改为|新しい|今から|代わりに|새로운|이제|대신",
    "output": r"\b(?:print|say|reply|respond|response|answer|output|write|repeat|include|state|display|spell|tell|translate|summari[sz]e|réponds|répondez|réponse|écris|affiche|dis|répète|antworte|antwort|schreibe|gib|sage|wiederhole|responde|respuesta|escribe|imprime|repite|responda|resposta|escreva|diga|repita|rispondi|risposta|scrivi|stampa|ripeti|ответь|ответ|выведи|напиши|скажи|повтори)\b|回答|回复|输出|打印|答え|出力|답변|출력|대답",
    "action": r"\b(?:send|forward|email|e-mail|transfer|upload|post|share|delete|visit|click|go to|open|download|execute|run|call|approve|invite|pay|wire|grant|envoie|envoyer|transfère|sende|senden|schicke|lösche|envía|enviar|envie|elimina|invia|inoltra|отправь|перешли|удали)\b|发送|转发|删除|送信|転送|削除|보내|전달|삭제",
    "role": r"\b(?:you are|you're now|act as|acting as|pretend|roleplay|role-play|persona|character|simulate|dan|jailbroken|unrestricted|unfiltered|uncensored|developer mode|tu es|agis comme|fais semblant|du bist|tu so|eres|actúa como|finge|você é|aja como|finja|agisci come|fingi|ты теперь|притворись|веди себя как)\b|你是|扮演|假装|あなたは|ふりを|演じ|당신은|역할",
    "secret": r"\b(?:don't tell|do not tell|do not mention|don't mention|do not reveal|without telling|without informing|secretly|quietly|silently|keep this|keep it|ne dis pas|sans le dire|nicht erwähnen|heimlich|no digas|sin decir|não diga|non dire|не говори|тайно)\b|不要告诉|秘密|言わない|알리지",
    "leak": r"\b(?:system prompt|system message|initial prompt|hidden prompt|developer message|verbatim|word for word|reveal|message système|systemprompt|system-prompt|systemnachricht|mensaje del sistema|prompt del sistema|prompt di sistema|системный промпт|системное сообщение)\b|系统提示|システムプロンプト|시스템 프롬프트",
    "urgent": r"\b(?:important|urgent|attention|warning|critical|immediately|must|required|mandatory|wichtig|dringend|importante|urgente|важно|срочно)\b|!!|\*\*\*|重要|紧急|至急|중요|긴급",
    "meta": r"\b(?:prompt injections?|injections?|jailbreaks?|attacks?|attackers?|adversarial|red[- ]team(?:ing)?|for example|e\.g\.|such as|researchers?|paper|detect(?:ion|or|s)?|vulnerabilit(?:y|ies)|owasp|benchmark|dataset|payloads?|malicious|defen[cs]es?|mitigations?|classifier|probe|attaque|angriff|ataque|attacco|атака)\b|攻击|攻撃|공격",
    "narrative": r"\b(?:said|asked|replied|whispered|he|she|his|her|him|they|chapter|once upon)\b",
    "code": r"\b(?:def|return|import|class|self|const|var|function|elif|async|await|lambda|null|none|true|false)\b|[{};=]|->|::|//",
    "url": r"https?://",
    "exfil": r"https?://[^\s)\"'<>]*\?[^\s)\"'<>]*=|!\[[^\]]*\]\(|\[[^\]]*\]\(https?://|[\w.+-]+@[\w-]+\.[\w.]+|\b[a-z]{2}\d{2}[a-z0-9]{10,}\b",
    "toolcall": r"\b(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?[a-z][a-z0-9]*_[a-z0-9_]+\b|\b[a-z]+_[a-z_]+\s*\(",
    "hidden": r"<!--|display\s*:\s*none|font-size\s*:\s*0|visibility\s*:\s*hidden|color\s*:\s*transparent",
    "role_mark": r"(?:^|\n)\s*(?:system|assistant|user|human|ai)\s*:|\[/?inst\]|<\|[a-z_]+\|>|</?system>|###",
}

_IMPERATIVE = frozenset(("override", "output", "action"))
_INTENT = frozenset(
    (
        "ai",
        "you",
        "instr",
        "override",
        "prior",
        "new",
        "output",
        "action",
        "role",
        "secret",
        "leak",
        "urgent",
        "toolcall",
    )
)
_ORDER = {name: index for index, name in enumerate(CONCEPTS)}
_OPENERS = b" \t\"'*>#-:([{"


def _split_top(alternation: str) -> list[str]:
    """The top-level alternatives of a regex alternation."""
    out, depth, last = [], 0, 0
    for i, char in enumerate(alternation):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            out.append(alternation[last:i])
            last = i + 1
    out.append(alternation[last:])
    return [a for a in out if a]


def _closing(src: str, opened: int) -> int:
    """The index of the parenthesis closing the one at ``opened`` (-1 if none)."""
    depth = 0
    for i in range(opened, len(src)):
        if src[i] == "(" and (i == 0 or src[i - 1] != "\\"):
            depth += 1
        elif src[i] == ")" and src[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _re2_source(src: str) -> bytes:
    """A concept as RE2 source over lower-cased UTF-8: RE2's ``\\b`` sees ASCII only, so a
    non-ASCII word is bounded by a non-letter (or an end) instead."""
    head, tail = "\\b(?:", ")\\b"
    close = _closing(src, 2) if src.startswith(head) else -1
    if close < 0 or not src.startswith(tail, close):
        return src.encode()
    words = src[len(head) : close]
    rest = _split_top(src[close + len(tail) :])
    ascii_words = [w for w in _split_top(words) if w.isascii()]
    other = [w for w in _split_top(words) if not w.isascii()]
    parts = []
    if ascii_words:
        parts.append(head + "|".join(ascii_words) + tail)
    if other:
        parts.append("(?:^|[^\\pL\\pN_])(?:" + "|".join(other) + ")(?:$|[^\\pL\\pN_])")
    return "|".join(parts + rest).encode()


@dataclass(frozen=True, slots=True)
class _Sets:
    """The concepts as two RE2 Sets: which occur anywhere in a sentence, which open it."""

    names: tuple[str, ...]
    anywhere: re2.Set
    opening: re2.Set


@functools.cache
def _sets() -> _Sets:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20
    anywhere, opening = re2.Set.SearchSet(options), re2.Set.MatchSet(options)
    names = tuple(CONCEPTS)
    for name in names:
        anywhere.Add(_re2_source(CONCEPTS[name]))
        opening.Add(_re2_source(CONCEPTS[name]) if name in _IMPERATIVE else b"[^\\x00-\\x{10ffff}]")
    anywhere.Compile()
    opening.Compile()
    return _Sets(names, anywhere, opening)


_SPLIT = re.compile(r"[.!?\n。！？]+")


def features(text: str) -> dict[str, float]:
    """The window's features: per concept the (log) number of sentences holding it, which
    concepts meet in one sentence, an imperative opening a sentence, and text shape (code,
    quotes, upper case). Two RE2 Set matches per sentence."""
    low = text.replace("\\n", "\n").lower()
    sets = _sets()
    names = sets.names
    counts: dict[str, int] = {}
    pairs: set[str] = set()
    whole = sets.anywhere.Match(low.encode()) or ()
    several = sum(1 for i in whole if names[i] in _INTENT) >= 2
    match = sets.anywhere.Match
    for sentence in _SPLIT.split(low) if several else ():
        if len(sentence) < 8:
            continue
        raw = sentence.encode()
        found = match(raw)
        if not found:
            continue
        held, met, imperative = _sentence_kind(tuple(sorted(found)))
        for name in held:
            counts[name] = counts.get(name, 0) + 1
        pairs.update(met)
        if imperative:
            opened = raw.lstrip(_OPENERS)
            pairs.update(f"starts_{names[i]}" for i in sets.opening.Match(opened) or ())
    for index in whole:  # present outside any long sentence: counted once
        counts.setdefault(names[index], 1)
    out: dict[str, float] = {}
    for name, n in counts.items():
        out[f"has_{name}"] = 1.0
        out[f"n_{name}"] = math.log1p(n)
    out.update(dict.fromkeys(pairs, 1.0))
    size = max(1, len(low))
    out["code_density"] = min(1.0, 20.0 * _code_marks(low) / size)
    out["quote_density"] = min(1.0, 30.0 * sum(map(low.count, _QUOTES)) / size)
    ascii_text = text.encode("ascii", "ignore")
    upper = len(ascii_text) - len(ascii_text.translate(None, _UPPER))
    letters = upper + len(ascii_text) - len(ascii_text.translate(None, _LOWER))
    out["upper_ratio"] = upper / letters if letters else 0.0
    return out


@functools.lru_cache(maxsize=4096)
def _sentence_kind(here: tuple[int, ...]) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """For the concepts one sentence holds (sorted indices): their names, the ``with_a_b``
    pairs of its intent concepts, and whether one of them is an imperative. A few hundred
    distinct sets occur in practice; each is worked out once."""
    names = _sets().names
    intent = [names[i] for i in here if names[i] in _INTENT]
    met = tuple(f"with_{a}_{b}" for i, a in enumerate(intent) for b in intent[i + 1 :])
    return tuple(names[i] for i in here), met, any(names[i] in _IMPERATIVE for i in here)


def _code_marks(low: str) -> int:
    """``len(re.findall(r"[{};=]|->|::|//", low))``: the two-character marks share no character
    with each other or with the single ones, so each count is that of its own occurrences."""
    return sum(map(low.count, _CODE_MARKS))


_CODE_MARKS = ("{", "}", ";", "=", "->", "::", "//")
_QUOTES = ('"', "\u201c", "\u201d", "\u00ab", "\u00bb", "`")
_UPPER = bytes(range(65, 91))
_LOWER = bytes(range(97, 123))


@dataclass(frozen=True, slots=True)
class IntentHit:
    """A window the model reads as orders to the model: its logit and its cues' byte span."""

    logit: float
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class IntentModel:
    """Weights per concept feature and per n-gram (keys with a space or no ``_``), bias,
    decision logit."""

    weights: dict[str, float]
    bias: float
    threshold: float
    provenance: dict[str, object]

    def logit(
        self, text: str, *, orders: bool = True, around: dict[str, float] | None = None
    ) -> float:
        return score(self.weights, self.bias, text, orders=orders, around=around)


_TABLE = str.maketrans(
    {
        **dict.fromkeys("\"#$%&'()*+,-/:;<=>@[\\]^_`{|}~0123456789\t\r", " "),
        **dict.fromkeys(".!?", "\n"),
        **dict.fromkeys(
            "\u00ab\u00bb\u2018\u2019\u201c\u201d\u201e\u2014\u2013\u3001\uff0c\uff1a\u300c\u300d",
            " ",
        ),
        **dict.fromkeys("\u3002\uff01\uff1f", "\n"),
    }
)
"""Punctuation, digits and ``_`` split words; a sentence end is a line end (one character for
one: ASCII text takes ``str.translate``'s fast path)."""


def _tokens(text: str) -> list[str]:
    """Lower-cased words, each sentence opened by ``.``; a run of CJK letters (no spaces
    between words) as its overlapping character pairs."""
    toks: list[str] = []
    for line in text.replace("\\n", "\n").lower().translate(_TABLE).split("\n"):
        if found := line.split():
            toks.append(".")
            toks.extend(found)
    if text.isascii():
        return toks
    out: list[str] = []
    for tok in toks:
        if tok[0] >= "\u3000" and len(tok) > 2:
            out.extend(tok[i : i + 2] for i in range(len(tok) - 1))
        else:
            out.append(tok)
    return out


def grams(text: str) -> set[str]:
    """The window's distinct word unigrams and bigrams (``"a b"``; ``". a"`` opens a sentence).
    None holds an underscore, so they never collide with the concept features' names."""
    return _grams_of(_tokens(text))


def _grams_of(toks: list[str]) -> set[str]:
    found = set(toks)
    found.update(map(" ".join, itertools.pairwise(toks)))
    found.discard(".")
    return found


_CLASSED = ("you", "ai", "override", "prior", "new", "instr", "output", "action", "leak", "secret", "urgent", "meta", "narrative", "code")  # fmt: skip
_EXTRA_CLASSES: dict[str, str] = {
    "modal": "must should shall will need needs have has required can may muss musst sollst debes devi doit dois devez devrait deve должен нужно必须 必要 해야",
    "please": "please kindly bitte favor por plait пожалуйста 请 ください 주세요",
    "neg": "not don never no nothing nor ne pas nicht kein keine nunca não non не нет 不 不要 しないで 마",
    "me": "me my i mine moi mon ma mes mich mir mein meine mí yo mi eu meu minha io mio mia я мне меня мой 我 私 나 제",
}
"""Word classes beside the concepts' single words: modals, politeness, negation, the speaker."""


@functools.cache
def _word_classes() -> dict[str, str]:
    """Word -> coarse class (first class wins): ``_EXTRA_CLASSES``, then the single words of
    the concept lexicons (one class per concept in ``_CLASSED``)."""
    out = {word: name for name, words in _EXTRA_CLASSES.items() for word in words.split()}
    for name in _CLASSED:
        src = CONCEPTS[name]
        head = "\\b(?:"
        if not src.startswith(head):
            continue
        close = _closing(src, 2)
        for word in _split_top(src[len(head) : close]):
            if word.endswith("?") and word[:-2].isalpha():  # "instructions?": both forms
                out.setdefault(word[:-2], name)
                word = word[:-1]
            if word.isalpha():
                out.setdefault(word, name)
    out["."] = "s"  # a sentence opening
    return out


def class_grams(toks: Sequence[str]) -> set[str]:
    """Bigrams and trigrams over the window's word classes (``k_you_modal_output``): each word
    as its coarse class, a run of unclassed words as one ``w``, ``.`` opening a sentence as
    ``s``. They name the shape of an order ("you must print", ". override w instr") in any
    wording."""
    seq: list[str] = []
    last = ""
    for cls in map(_word_classes().get, toks, itertools.repeat("w")):
        if cls != last or cls != "w":
            seq.append(cls)
            last = cls
    k = ["k"] * len(seq)
    out = set(map("_".join, zip(k, seq, seq[1:], strict=False)))
    out.update(map("_".join, zip(k, seq, seq[1:], seq[2:], strict=False)))
    return out


GATE = (
    "has_ai",
    "has_you",
    "has_role_mark",
    "has_output",
    "has_toolcall",
    "has_leak",
    "has_secret",
    "has_exfil",
    "has_role",
)
"""A window is read only if it speaks to someone (the model, "you", a chat role) or directs an
answer, a tool, a leak or a link: "ignore the previous draft" in a README does neither."""


ORDERS = (
    "has_override",
    "has_output",
    "has_action",
    "has_role",
    "has_leak",
    "has_secret",
    "has_toolcall",
    "has_exfil",
    "has_instr",
    "has_role_mark",
)
"""And, at the default threshold, only if it holds an order of some kind: "Note to the AI
assistant: the itinerary is in the shared folder" speaks to the model but asks nothing of it;
a stricter source (a manifest threshold under 1, e.g. web pages) holds it all the same."""


CONTEXT_FEATURES = ("ctx_fence", "ctx_about", "ctx_doc")
"""The features ``context`` can give."""
_FENCE_SCAN = 65536
"""Bytes before a window in which fences are counted: a body's cost stays linear in its size
(a window per 32 KiB at most, each scanning this much)."""
_AROUND = 2048
"""Bytes on each side of a window that ``context`` reads for words about attacks."""
_ABOUT = (b"attack", b"inject", b"jailbreak", b"malicious", b"adversar", b"example", b"e.g.", b"payload", b"red team", b"red-team", b"vulnerab", b"detect", b"exploit", b"such as")  # fmt: skip
_DOC_MARKS = (b"\n#", b"```", b"](", b"\n- ", b"\n* ", b"\n|", b"\\n#", b"\\n- ", b"\\n* ", b"\\n|")
"""Markdown structure, with its line ends as they are or escaped (a JSON string's ``\\n``)."""


def context(data: bytes, lo: int, hi: int) -> dict[str, float]:
    """What the body around a window ``data[lo:hi]`` says about it, from bytes outside the
    window: ``ctx_fence``, the window opens inside a markdown code fence (an odd number of
    fences in the ``_FENCE_SCAN`` bytes before it); ``ctx_about``, words about attacks
    (attack, injection, jailbreak, payload, "for example" ...) within ``_AROUND`` bytes either
    side; ``ctx_doc``, markdown structure (headings, fences, links, list items, table rows) in
    the same span. Text that quotes or discusses an attack sits in such surroundings; an attack
    usually does not, but an attacker can write them too: they are weights the model learns,
    not a pass. Byte counts only, a few microseconds per window."""
    out: dict[str, float] = {}
    if data.count(b"```", max(0, lo - _FENCE_SCAN), lo) % 2:
        out["ctx_fence"] = 1.0
    near = data[max(0, lo - _AROUND) : lo].lower() + b"\n" + data[hi : hi + _AROUND].lower()
    about = sum(map(near.count, _ABOUT))
    if about:
        out["ctx_about"] = math.log1p(about)
    doc = sum(map(near.count, _DOC_MARKS))
    if doc:
        out["ctx_doc"] = math.log1p(doc)
    return out


def score(
    weights: dict[str, float],
    bias: float,
    text: str,
    *,
    orders: bool = True,
    around: dict[str, float] | None = None,
) -> float:
    """The logit: concept features, class n-grams and the word n-grams the window holds, and
    the body's ``context`` around it (``around``); windows outside the ``GATE``, or
    (``orders``) without any of the ``ORDERS``, get no score (minus infinity)."""
    found = features(text)
    if not any(k in found for k in GATE):
        return -math.inf
    if orders and not any(k in found for k in ORDERS):
        return -math.inf
    get, zero = weights.get, itertools.repeat(0.0)  # map: the genexprs' sums, term for term
    total: float = bias + sum(map(operator.mul, map(get, found, zero), found.values()))
    if around:
        total += sum(map(operator.mul, map(get, around, zero), around.values()))
    toks = _tokens(text)
    gram_total: float = sum(map(get, _grams_of(toks) | class_grams(toks), zero))
    return total + gram_total


def describe(text: str) -> tuple[dict[str, float], set[str]]:
    """What the model reads in a window: its concept features with its class n-grams (weighed
    as given), and its word n-grams (each weighs 1 when present)."""
    found = features(text)
    toks = _tokens(text)
    found.update(dict.fromkeys(class_grams(toks), 1.0))
    return found, _grams_of(toks)


@functools.cache
def load_model() -> IntentModel:
    """The shipped model (read from the package on first use)."""
    raw = resources.files("fak.screen").joinpath(WEIGHTS).read_bytes()
    data = json.loads(gzip.decompress(raw))
    return IntentModel(
        weights={str(k): float(v) for k, v in data["weights"].items()},
        bias=float(data["bias"]),
        threshold=float(data["threshold"]),
        provenance=dict(data["provenance"]),
    )


BUDGET_BASE = 4
BUDGET_BYTES = 32768
"""Windows read per body: at most ``BUDGET_BASE`` plus one per ``BUDGET_BYTES`` bytes, the
ones whose cues weigh most first. Ordinary results have no cues at all; this bounds what a
body dense with trigger words (a security tool's own source) costs."""
_CANDIDATE_WEIGHT = 0.3  # a weight-0 candidate cue counts this much when windows are ranked
FLOOR = 0.3
"""A window is read when its cues weigh at least this much: one candidate cue (an order-giving
shape, see ``fak.screen.injection``) or one weak cue is enough; the budget bounds the cost."""
REQUEST_PRIOR = 2.6
"""Subtracted from the logit of a window that only requests made of a reader selected
(``fak.screen.cues.REQUESTS``: "Generate …", "could you", "I want"): people ask people for
things in everyday text, so such a window must read as an order more strongly (2.4 + 2.6 = 5.0
at the shipped threshold). Chosen on the train split: the train benign holds those windows add
fall from 10 to 1 (``benchmarks/screen_quality.py --by-source``)."""
_REQUEST = re2.compile(b"(?:" + b"|".join(REQUESTS) + b")")
WEAK = 0.5
WEAK_BUDGET = 2
"""A window whose cues weigh less than ``WEAK`` is read only if it holds a candidate cue (a lone
"assistant" is not enough), and only the first two such windows of a body."""


def read_windows(
    data: bytes, cues: Sequence[tuple[int, int, float]], scale: float = 1.0, *, first: bool = False
) -> list[IntentHit]:
    """Windows around the cues the cheap pass found (start, end, weight; in order), read by the
    model. A hit's span is that of its window's cues (as a cue hit's is), not the whole window.

    ``scale`` multiplies the decision logit (a source's injection threshold); under 1, a window
    that orders nothing is read too (see ``ORDERS``). Which windows: ``candidate_groups``.
    """
    groups = candidate_groups(data, cues)
    if not groups:
        return []
    model = load_model()
    cut = model.threshold * scale
    hits: list[IntentHit] = []
    for group in groups:
        if (hit := _judge(model, data, group, cut, orders=scale >= 1.0)) is not None:
            hits.append(hit)
            if first:
                break
    return hits


def candidate_groups(
    data: bytes, cues: Sequence[tuple[int, int, float]]
) -> list[list[tuple[int, int]]]:
    """The cue runs whose windows the model reads, in text order: cues within ``WINDOW`` bytes
    of the first of a run share one window; a run is read when its cues weigh at least ``FLOOR``
    (a candidate cue counts ``_CANDIDATE_WEIGHT``), within the budget."""
    groups: list[tuple[float, int, list[tuple[int, int]]]] = []
    group: list[tuple[int, int]] = []
    weight = 0.0
    candidate = False
    weak: list[tuple[float, int, list[tuple[int, int]]]] = []
    for start, end, cue_weight in [*cues, (1 << 62, 0, 0.0)]:
        if group and start - group[0][0] > WINDOW - _BEFORE:
            if weight >= WEAK:
                groups.append((weight, -group[0][0], group))
            elif candidate and weight >= FLOOR and len(weak) < WEAK_BUDGET:
                weak.append((weight, -group[0][0], group))
            group, weight, candidate = [], 0.0, False
        if end:
            group.append((start, end))
            candidate = candidate or cue_weight == 0
            weight += cue_weight if cue_weight > 0 else (_CANDIDATE_WEIGHT * (cue_weight == 0))
    groups += weak
    budget = BUDGET_BASE + len(data) // BUDGET_BYTES
    if len(groups) > budget:
        groups = sorted(groups, reverse=True)[:budget]
    return [g for _, _, g in sorted(groups, key=lambda g: -g[1])]


def window_of(data: bytes, group: list[tuple[int, int]]) -> tuple[int, int]:
    """The bytes the model reads for a run of cues: ``_BEFORE`` before its first cue to at
    least ``WINDOW`` bytes on, and ``_BEFORE`` past its last cue."""
    first, last = group[0][0], max(end for _, end in group)
    lo = max(0, first - _BEFORE)
    return lo, min(len(data), max(lo + WINDOW, last + _BEFORE))


def _judge(
    model: IntentModel, data: bytes, group: list[tuple[int, int]], cut: float, *, orders: bool
) -> IntentHit | None:
    lo, hi = window_of(data, group)
    window = data[lo:hi]
    shared = current()  # within one admission, a window's bytes are read once
    known = None if shared is None else shared.windows.get((window, orders))
    if known is not None and known[0] is model:
        logit = known[1]
    else:
        logit = model.logit(window.decode("utf-8", errors="ignore"), orders=orders)
        if shared is not None:
            shared.windows[window, orders] = (model, logit)
    if logit == -math.inf:
        return None
    prior = REQUEST_PRIOR if all(_REQUEST.fullmatch(data[s:e]) for s, e in group) else 0.0
    # the body around the window: a few byte counts, added to the (shared) window's own logit;
    # when no context weight is positive, context only lowers a logit: read it only for a hit
    get = model.weights.get
    lifts = any(get(k, 0.0) > 0 for k in CONTEXT_FEATURES)
    if (lifts or logit - prior >= cut) and (around := context(data, lo, hi)):
        logit += sum(get(k, 0.0) * v for k, v in around.items())
    logit -= prior
    if logit < cut:
        return None
    return IntentHit(round(logit, 3), group[0][0], max(end for _, end in group))
