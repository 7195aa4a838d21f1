# ruff: noqa: E501  (the cue table: one pattern a line reads better than wrapped fragments)
"""The injection cue table's second set of languages (tier T1, data).

Rows in the shape of ``fak.screen.cues.CUES`` (family, weight, RE2 source in Latin-1 mode), for
tr, vi, pl, id/ms, nl, sw, cs and ro (written as their ASCII skeleton), ar, fa, hi, uk, th, el,
he and bn (in their script). ``fak.screen.cues`` splices them into its table in this order,
between the first set of languages and the candidates.
"""

from __future__ import annotations

from fak.screen.cue_families import Cue

__all__ = ["WORLD_CUES"]


def _arabic(src: str) -> str:
    """Arabic-script cue source that also matches the other spelling of its letters: Arabic and
    Persian yeh and kaf, alef with or without hamza, final teh marbuta written as heh."""
    return src.translate(_ARABIC_LETTERS)


_ARABIC_LETTERS = str.maketrans({
    "ي": "(?:ي|ی|ى)", "ی": "(?:ی|ي|ى)", "ك": "(?:ك|ک)", "ک": "(?:ک|ك)",
    "أ": "(?:أ|ا)", "إ": "(?:إ|ا)", "ة": "(?:ة|ه)",
})  # fmt: skip

WORLD_CUES: tuple[tuple[Cue, float, bytes], ...] = (
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
)  # fmt: skip
