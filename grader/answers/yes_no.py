"""A yes/no answer as students write it, in a PDF report or an answer sheet.

    read_yes_no("NO, because only one GPU works at a time")
        -> YesNo(value="no", explanation="because only one GPU works at a time")

The first word decides and the rest is the explanation: "No", "no.", "Yes - every GPU holds
four layers", "**No**"; "Yeah", "Yep" are yes, and a no written without the word where the
next words leave no doubt ("Not faster", "Not really", "Not proportional at all", "Nope") is
no, the whole text its explanation; "True." and "False, only one GPU works" answer too, and so does
agreement said alone ("Right.", "That's right", "Exactly!", "Indeed.", "Sure - ...": a yes; "Right?",
"right GPU", "exactly 2x", "Not exactly" are not). Nothing else is guessed: a hedged "not" ("Not
necessarily", "Not identical, but allclose", "Not just faster"), "no" before a noun ("No
difference": to "same loss?" that is a yes), both answers ("Yes for 2 GPUs, no for 5"),
"Partly", "It depends", and an answer hedged right after its word ("No / maybe", "Yes or not",
"yes - it depends", "No (could be either)") are `unclear`, so a person reads them; the template's "yes/no" left as
it is (or "yes or no", "yes and no") and a placeholder ("...", "TODO") are `unanswered`. A
short sentence answers too where its words leave no doubt: "It does not - the step time
grows", "They don't.", "It is." ("It is slower", "It does not matter" are unclear), also with
the question's own subject ("Increasing DEPTH does not improve speed", "More GPUs make it
faster."; "It does not make it slower" denies the other thing and is unclear), and so does a
conclusion at the end: "All 5 hold 4 layers each, so yes". Estonian "Jah, ..." and "Ei, ..."
answer as "Yes, ..." and "No, ..." do, and so do "Jah" and "Ei" as the whole answer.

Given the question, a short sentence saying its own comparative word or that word's antonym, and
nothing else, answers too (read_in_the_questions_word): to "did training become faster?", "It
got slower." is no and "Faster" yes; "The single GPU was slower" (another subject) is left for a
person. "than ..." naming what the question compares with restates it: to "compared with
DataParallel, are the GPUs more balanced?", "More balanced than DP" is yes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .aspect_words import METHOD_NAMES

# Marks a student puts before the word: a colon or dash after the label, a table's "|",
# Markdown emphasis left in the PDF, an opening quote or bracket.
_LEAD = r"[\s|:=>\-?*_\"'(\[]*"
# "True" and "False" (YAML's spelling, a programmer's habit) only as a word of their own:
# "True parallelism is not reached" does not begin with an answer.
# Estonian "Jah," and "Ei," (the course is taught in Estonia) only with a pause after them, as
# "Yes,"/"No," are written before an explanation, or as the whole answer ("Ei", "jah."): "ei"
# before another word is also Estonian's "not" ("Ei ole kiirem": is not faster).
# A yes or no said with another word, only as a word of its own with a pause after it
# ("Absolutely.", "Of course - every rank holds a replica", "Definitely not", "Never."):
# "Definitely faster", "Of course not all GPUs", "Never slower" say something else.
_EMPHATIC = r"absolutely|definitely|certainly|of\s+course"
_SAID_ALONE = r"(?=\s*(?:[,.;:!()\-–—]|$))"
# Agreement said alone ("Right.", "That's right", "Exactly!", "Indeed.", "Sure - every rank ..."):
# a yes to a plain yes/no question, as every one of the handouts' is (tests/answers/test_yes_no.py
# checks each). These words also start other things, so a hyphen is no pause here: "Right?"
# asks back, "right GPU", "right-hand side" and "exactly 2x" say something else, and "Not
# exactly" is no agreement (it does not start with the word).
_AGREEING = (r"(?:that['’]?s|that\s+is|quite|exactly|absolutely)\s+(?:right|correct)|"
             r"right|exactly|indeed|sure|precisely")
_AGREEING_ALONE = r"(?=\s*(?:[,.;:!()–—]|-(?!\w)|$))"
_FIRST = re.compile(_LEAD + r"(?P<word>yes|no|yeah|yep|yup|nope|(?:true|false)(?=\s*(?:[,.;:!()\-–]|$))|"
                    r"(?:jah|ei)(?=\s*(?:[,.;:!\-–—]|$))|"
                    r"(?:(?:" + _EMPHATIC + r")(?:\s+not)?|correct|never)" + _SAID_ALONE + "|"
                    r"(?:" + _AGREEING + ")" + _AGREEING_ALONE + r")\b(?P<rest>.*)",
                    re.I | re.S)
_WORDS = {"yes": "yes", "yeah": "yes", "yep": "yes", "yup": "yes", "true": "yes", "jah": "yes",
          "correct": "yes", "absolutely": "yes", "definitely": "yes", "certainly": "yes",
          "of course": "yes",
          "no": "no", "nope": "no", "false": "no", "ei": "no", "never": "no"}


def _word_of(said: str) -> str:
    """ "Of  course" -> "of course", "Definitely not" -> "no", "That's right" -> "yes": the key
    of _WORDS."""
    said = " ".join(said.lower().split())
    if said.endswith(" not"):
        return "no"
    return "yes" if re.fullmatch(_AGREEING, said) else said
_ESTONIAN = {"jah", "ei"}
# An Estonian answer's doubt, anywhere in it: "maybe", "probably", "partly", "it depends",
# "I don't know", "not sure", "but not" ("Jah, aga ei 5 GPU puhul": yes, but not for 5).
_ESTONIAN_HEDGE = re.compile(r"\b(?:võib[- ]olla|vist|ilmselt|arvatavasti|osaliselt|oleneb|sõltub|"
                             r"ei\s+tea|(?:pole|ei\s+ole)\s+kindel|(?:aga|kuid|ent)\s+(?:ei|mitte|pole))\b", re.I)
# A no without the word, only where the next words leave no doubt: "Not faster", "Not really",
# "Not proportional at all". "Not identical, but allclose", "Not just faster", "Not slower" say
# something else: a person reads them.
# "Not anymore" / "Not any longer" (to "is GPU 0 still a bottleneck?") deny the question's
# "still": a no, said alone ("Not any more than before" compares).
_NOT = re.compile(_LEAD + r"not\s+(?:(?:really|at\s+all|faster|quicker|proportional(?:ly)?|"
                  r"linear(?:ly)?|balanced|evenly|equally(?:\s+utili[sz]ed)?|improved|"
                  r"improving)\b|(?:any\s*more|any\s+longer)" + _SAID_ALONE + r")(?P<rest>.*)",
                  re.I | re.S)
# The answer as a short sentence: "It does not - the step time grows", "They don't.", "It
# does." (a subject and its auxiliary, then a pause or a verb of the question's kind). "It is
# slower" or "It does not matter" say something else: a person reads them.
_AUXILIARY_VERB = r"\s+(?:really\s+)?(?:does|do|did|is|are|was|were|can|will|has|have)"
_AUXILIARY = r"(?:(?:it|they|depth|more\s+depth|communication)" + _AUXILIARY_VERB + r"|it['’]s|they['’]re)"
# The questions' own subjects in a denial, where "it" would stand: "Increasing DEPTH does not
# improve speed", "More GPUs do not make it faster". Not for a bare "... is." ("The number of
# GPUs is: 5" answers nothing).
_SPEED_SUBJECT = (r"(?:(?:increasing|adding|using)\s+)?(?:the\s+)?(?:more\s+)?"
                  r"(?:depth|(?:number\s+of\s+)?(?:layers|gpus))")
_TRANSFER_SUBJECT = r"(?:the\s+)?(?:number\s+of\s+)?(?:transfers|communication(?:\s+overhead)?)"
_NAMED_AUXILIARY = r"(?:" + _SPEED_SUBJECT + "|" + _TRANSFER_SUBJECT + ")" + _AUXILIARY_VERB
_PAUSE = r"(?=\s*(?:[-–—,.;:!(]|$))"
# A yes needs a full stop, a dash or a colon after it: "It is, however, slower" and "That is,
# one GPU at a time" go on with something else.
_YES_PAUSE = r"(?=\s*(?:[-–—.;:!]|$))"
_QUESTION_VERB = (r"\s+(?:really\s+)?(?:improve|help|speed|get|become|run|grow|scale|increase|"
                  r"change|reduce|use|utili[sz]e|make|faster|quicker|(?:all\s+)?(?:used|utili[sz]ed|busy))\b")
_SENTENCE_NO = re.compile(_LEAD + r"(?:" + _AUXILIARY + "|" + _NAMED_AUXILIARY + r")(?:\s*n['’]?t|\s+not)"
                          r"(?P<denied>" + _PAUSE + "|"
                          + _QUESTION_VERB + r")(?P<rest>.*)", re.I | re.S)
_SENTENCE_YES = re.compile(_LEAD + _AUXILIARY + _YES_PAUSE + r"(?P<rest>.*)", re.I | re.S)
# A negated verb whose words go the other way: "It does not make it slower", "Depth does not
# increase the step time" deny a slow-down, which answers no question of speed: a person reads it.
_OTHER_WAY = re.compile(r"^[^-–—,.;:!(]*\b(?:slower|worse|longer|hurts?|slow\w*\s+(?:it\s+|\w+\s+)?down|"
                        r"(?:reduce|decrease|lower)\w*\s+(?:the\s+)?(?:training\s+)?speed|"
                        r"(?:increase|raise|add)\w*\s+(?:to\s+)?(?:the\s+)?(?:step\s+|training\s+|run\s+)?time)\b",
                        re.I)
# The question's own statement affirmed, with its subject named: "Increasing DEPTH improves
# speed.", "More GPUs make it faster", "The number of transfers grows with the number of GPUs".
# Only these verbs, and nothing but a pause after them ("... improves speed only for ..." and
# "It increases" say something else).
_STATEMENT_YES = re.compile(_LEAD + r"(?:" + _SPEED_SUBJECT + r"\s+(?:(?:does|do|really)\s+)?"
                            r"(?:improves?\s+(?:the\s+)?(?:training\s+)?(?:speed|performance)|"
                            r"makes?\s+(?:it|(?:the\s+)?training|(?:each\s+|the\s+)?step)\s+faster|"
                            r"speeds?\s+(?:it\s+|(?:the\s+)?training\s+)?up)|"
                            + _TRANSFER_SUBJECT + r"\s+(?:(?:does|do)\s+)?(?:grows?|increases?)"
                            r"(?:\s+with\s+(?:the\s+)?(?:number\s+of\s+gpus|(?:more\s+)?gpus))?)"
                            + _YES_PAUSE + r"(?P<rest>.*)", re.I | re.S)
# "No difference", "No speed-up": "no" before a noun is not the answer word, and which answer it
# makes depends on the question ("same loss?": yes).
_NO_BEFORE_NOUN = re.compile(r"^\s+(?:significant\s+|real\s+|visible\s+|noticeable\s+|big\s+|"
                             r"major\s+)?(?:difference|change|changes|effect|improvement|"
                             r"speed-?up|gain|benefit|gpus?|idle|need|manual|question|idea|clue|answer|"
                             r"time|transfers?|copies|layers?|memory|bottleneck|split(?:ting)?|problem)\b", re.I)
# A second answer after a yes: "no" standing alone or before a condition ("no for 5"), not the
# "no" of "no GPU is idle".
_SECOND_ANSWER_FOLLOWS = (r"(?=\s*(?:[,.;:!)]|$|\s(?:for|with|on|in|when|if|at|otherwise|"
                          r"actually)\b))")
# "true"/"false" answer only where a clause starts ("False, true for 2 GPUs"), never inside
# one ("No, the opposite is true.").
# A bracket opens one too: "yes (false)" (adv57 F-A).
_CLAUSE_START = r"(?:^|(?<=[,;.:!(])\s*|(?<=[,;.:!(]\s)|(?<=\bbut\s))"
# Other languages' words, read only as a second answer standing alone ("no (ja)", "yes (nein)").
_FOREIGN_NO = r"non|nein|nee|niet|nej"
_FOREIGN_YES = r"oui|ja|si|sí|da"
_OTHER_NO = (r"(?:\b(?:no|nope|ei)\b|" + _CLAUSE_START + r"\b(?:false|" + _FOREIGN_NO + r")\b)"
             + _SECOND_ANSWER_FOLLOWS)
# A second answer after a no: any yes word ("No... yes for 2"), or "true" starting a clause.
_OTHER_YES = (r"\b(?:yes|yeah|yep|jah)\b|" + _CLAUSE_START + r"\b(?:true|" + _FOREIGN_YES + r")\b"
              + _SECOND_ANSWER_FOLLOWS)
# Both words together: the template's "yes/no" kept, or a student sitting on the fence.
_BOTH = re.compile(r"^\s*(?:/|\\|\||&|\bor\b|\band\b)\s*(?:yes|no)\b", re.I)
_PLACEHOLDER = re.compile(r"^\W*(?:todo|tbd|n/?a|answer|your answer|\.\.\.|…|_+)?\W*$", re.I)
# The answer as the reasoning's conclusion, last: "All 5 hold 4 layers each, so yes",
# "only one GPU works at a time - therefore no." (nothing after it, no other answer before).
_CONCLUSION = re.compile(r"(?:[,;:.\-–—]\s*|\s)(?:so|thus|hence|therefore)[,:]?\s+"
                         r"(?P<word>yes|no)\s*[.!]?\s*$", re.I)
# A hedge right after the word takes the answer back: another option ("No / maybe", "Yes or
# not", "No (could be either)") or a refusal to choose ("yes - it depends", "No, not sure").
# Only where it qualifies the answer, not the explanation's words: "Yes, both GPUs hold
# layers", "Yes (both readings)" (a yes under either reading of the question), "No, probably
# because of the copies" and "No, the time depends on DEPTH" answer.
# What ends a hedging word when it stands alone ("No, maybe." / "Yes (probably)"), not as the
# start of a reason ("Yes. Probably the biggest factor is ...", "No, sometimes it is slower").
_ALONE = r"\s*(?:[.,;!?)]|$|not\b|yes\b|no\b)"
_HEDGE = re.compile(r"^[\s,;:.!\-–—/(|]*(?:\?|-?ish\b|or\b|"
                    r"(?:maybe|perhaps|possibly|probably|likely|presumably|kind\s+of|sort\s+of|more\s+or\s+less|"
                    r"partly|partially|mostly|sometimes|not\s+always|not\s+necessarily|not\s+really|in\s+theory)"
                    + _ALONE + "|"
                    r"could\s+be\s+(?:either|both|yes|no)\b|can\s+be\s+either\b|"
                    r"(?:it\s+)?depends" + _ALONE + "|"
                    r"either\b(?=\s*(?:[).,;]|$|one\b|answer\b|could\b|can\b|is\s+(?:fine|possible|right|true)\b))|"
                    r"not\s+sure|unsure|unclear|hard\s+to\s+say|can'?t\s+(?:say|tell)|no\s+idea|"
                    r"both\s+(?:answers|options)\b)", re.I)
# Anywhere in the answer: a refusal to choose stated on its own ("No. It depends on the
# machine.", "yes, though it could be either", "Yes (not 100% sure)", "Yes, 50/50"); "it
# depends on the slowest stage" is a reason, and "not sure why" doubts a reason, not the answer.
_REFUSAL = re.compile(r"(?:^|[,;:.!\-–—(/]\s*|\b(?:though|but)\s+)(?:it|that|this)\s+depends\s*(?:[.,;!)]|$|on\s+(?:the\s+)?"
                      r"(?:machine|hardware|setup|situation|case|system|run|gpus?|batch(?:\s+size)?)\b)|"
                      r"\bcould\s+(?:be|go)\s+either\b|\bcan\s+be\s+either\b|\bnot\s+(?:100\s*%\s+)?sure\b(?!\s+(?:why|how))|"
                      r"\b50\s*/\s*50\b|\b(?:just\s+)?a\s+guess\b|\bguess(?:ed|ing)?\b(?=\s*[,)(]|\s+(?:since|as)\b)|"
                      r"\beither\s+(?:way|answer|one)\s+(?:is|could|can|works)\b", re.I)
# What separates the word from its explanation: "No, because", "Yes - every", "No. The".
_AFTER_WORD = re.compile(r"^[\s,.;:!\-*_\"')\]]*")


@dataclass(frozen=True)
class YesNo:
    value: str | None = None  # "yes" | "no", None when not read
    explanation: str = ""     # the text after the word, as the student wrote it
    unanswered: bool = False  # nothing, a placeholder, or the template's "yes/no" left
    unclear: bool = False     # text that does not start with a clear yes or no
    hedged: bool = False      # unclear because it gives both answers or takes its word back

    @property
    def answered(self) -> bool:
        return self.value is not None


# The template's placeholder left before the answer typed after it ("... No", "yes/no: No",
# "(yes/no) Yes - all GPUs hold layers").
_TEMPLATE_LEFT = re.compile(r"^\s*(?:\.\.\.|…|\(?\s*yes\s*/\s*no\s*\)?\s*[:=]?)\s*(?=\S)", re.I)


def read_yes_no(text: str) -> YesNo:
    text = (text or "").strip()
    typed_after = _TEMPLATE_LEFT.sub("", text, count=1)
    if typed_after != text and _FIRST.match(typed_after):
        text = typed_after
    if len(text) <= 40 and _PLACEHOLDER.match(text):   # short: the pattern's time grows fast
        return YesNo(unanswered=True)
    first = _FIRST.match(text)
    if first is None:
        for pattern, word in ((_NOT, "no"), (_SENTENCE_NO, "no"), (_SENTENCE_YES, "yes"),
                              (_STATEMENT_YES, "yes")):
            found = pattern.match(text)
            other_way = pattern is _SENTENCE_NO and found is not None and _OTHER_WAY.match(
                found.group("denied") + found.group("rest"))
            if found and not other_way and not re.search(
                    r"\bbut\b|\byes\b|\btrue\b|\bno\b|\bnot\b" if word == "yes"
                    else r"\bbut\b|\byes\b|\btrue\b", found.group("rest"), re.I):
                return YesNo(word, text.strip(" *_\"'"))
            if found:
                break
        closing = _CONCLUSION.search(text)
        if closing and not re.search(r"\b(?:yes|no|yeah|yep|nope|true|false)\b",
                                     text[:closing.start()], re.I):
            return YesNo(_WORDS[closing.group("word").lower()], text[:closing.start()].strip())
        return YesNo(unclear=True)
    rest = first.group("rest")
    word = _WORDS[_word_of(first.group("word"))]
    if word == "no" and _NO_BEFORE_NOUN.match(rest):
        return YesNo(unclear=True)
    # "Yes for 2 GPUs, no for 5", "Yeah, no": both answers given ("Yes, no GPU idles" is one).
    if re.search(_OTHER_NO if word == "yes" else _OTHER_YES, rest, re.I) \
            and not _BOTH.match(rest):
        return YesNo(unclear=True, hedged=True)
    if _BOTH.match(rest):
        # "yes/no" alone is the template's placeholder; "yes and no, it depends" is a fence.
        left = _BOTH.sub("", rest, count=1)
        if len(left) <= 40 and _PLACEHOLDER.match(left):
            return YesNo(unanswered=True)
        return YesNo(unclear=True, hedged=True)
    if _HEDGE.match(rest) or _REFUSAL.search(rest) \
            or (first.group("word").lower() in _ESTONIAN and _ESTONIAN_HEDGE.search(rest)):
        return YesNo(unclear=True, hedged=True)
    return YesNo(word, _AFTER_WORD.sub("", rest, count=1).strip())


def starts_with_yes_no(text: str) -> bool:
    """Whether `text` opens with a clear yes or no (an answer on the line under its label)."""
    return read_yes_no(text).answered


# -- the question's own word ---------------------------------------------------------------------
# The comparative words of the sheets' yes/no questions, each with its antonym: an answer that
# says one of them of the question's subject answers the question ("faster?": "Slower" is no).
# Nothing else is read this way: no synonyms ("identical" for "same"), no words of other kinds.
WORD_PAIRS = (("faster", "slower"), ("same", "different"), ("equal", "different"),
              ("manually", "automatically"), ("more loaded", "less loaded"),
              ("more balanced", "less balanced"), ("equally", "unequally"),
              # "does the execution pattern change?": "Unchanged" is a no (adv55 I).
              ("change", "unchanged"))
# How much of it ("2.7x slower", "much slower", "the same"): nothing that turns it ("not").
_DEGREE = (r"(?:(?:much|a\s+bit|a\s+little|slightly|even|actually|noticeably|significantly|"
           r"considerably|clearly|exactly|almost|nearly|roughly|the|\d+(?:[.,]\d+)?\s*(?:x|×|times))\s+)*")
_PRONOUN = r"(?:it|they|this|that|both)"
_LINKING_VERB = r"(?:is|are|was|were|got|gets|get|became|becomes|become|ran|runs|run)"
_QUESTION_AUXILIARY = re.compile(r"\b(?:is|are|was|were|do|does|did)\b", re.I)
# What may not follow the word: a second thought, another answer, a doubt.
_TURN = re.compile(r"\b(?:but|however|although|though|except|unless|otherwise)\b|\?", re.I)
_PAUSE_CHARS = ",.;:!(-–—"


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _question_word(question: str) -> tuple[str, str, str, str] | None:
    """(word, antonym, the question's subject, the question after the word) for the one pair
    of WORD_PAIRS the question says; None for none or several."""
    found = []
    for pair in WORD_PAIRS:
        for word, antonym in (pair, pair[::-1]):
            match = re.search(r"\b" + word.replace(" ", r"\s+") + r"\b", question, re.I)
            if match:
                found.append((word, antonym, match))
    if len(found) != 1:
        return None
    word, antonym, match = found[0]
    before = question[:match.start()]
    auxiliaries = list(_QUESTION_AUXILIARY.finditer(before))
    subject = before[auxiliaries[-1].end():] if auxiliaries else ""
    return word, antonym, subject, question[match.end():]


# "More balanced than DP" to "compared with DataParallel, are the GPUs more balanced?": the
# "than ..." names what the question compares with, by any of the method's names
# (aspect_words.METHOD_NAMES); "than on one GPU" or "than DDP" is another comparison.
_COMPARED_WITH = re.compile(r"\bcompared\s+(?:with|to)\s+(?:the\s+)?", re.I)
_THAN = re.compile(r"\s*than\s+(?:(?:with|in|using|under|for)\s+)?(?:the\s+)?(?P<what>.+?)(?:['’]s)?"
                   r"(?:\s+(?:does|did|is|was|are|were))?\s*", re.I | re.S)


def _than_the_questions_own(said: str, question: str) -> bool:
    asked, than = _COMPARED_WITH.search(question), _THAN.fullmatch(said)
    return bool(asked and than) and any(
        re.match(name, question[asked.end():], re.I) and re.fullmatch(name, than["what"], re.I)
        for name in METHOD_NAMES.values())


def read_in_the_questions_word(text: str, question: str) -> YesNo:
    """A yes/no question answered by its own comparative word or that word's antonym, the
    question's subject (or "it", "they") before it and nothing after it but the question's own
    next words ("Same final loss"), a pause and an explanation: "It got slower." (to "faster?":
    no), "Slower", "Faster", "GPU 0 is more loaded", "Automatically, by DataParallel" (to
    "split manually?": no), "They are equal (allclose returns True)". Anything else is unclear:
    another subject ("The single GPU was slower"), another comparison ("Faster on one GPU"),
    both words, a "not" (but before the question's own word: "Not automatically - each rank
    takes its part" is a no), a doubt, or another answer in the explanation."""
    asked = _question_word(question or "")
    text = (text or "").strip()
    if asked is None or len(text) > 300:
        return YesNo(unclear=True)
    word, antonym, subject, after = asked
    said = re.match(_LEAD + r"(?:(?P<subject>[\w .'-]+?)\s+" + _LINKING_VERB + r"\s+|"
                    r"(?:it|they)['’](?:s|re)\s+)?(?:(?P<not>not\s+)|" + _DEGREE + ")" +
                    r"(?P<word>" + word.replace(" ", r"\s+") + "|" + antonym.replace(" ", r"\s+") +
                    r")\b(?P<rest>.*)$", text, re.I | re.S)
    if said is None:
        return YesNo(unclear=True)
    who = _words(said.group("subject") or "")
    if who and who[0] == "the":
        who = who[1:]
    asked_about = _words(subject)
    if who and not re.fullmatch(_PRONOUN, " ".join(who)) and not any(
            asked_about[i:i + len(who)] == who for i in range(len(asked_about))):
        return YesNo(unclear=True)   # "The single GPU was slower": not the question's subject
    value = "yes" if re.fullmatch(word.replace(" ", r"\s+"), said.group("word"), re.I) else "no"
    if said.group("not"):
        # "Not automatically" (to "split automatically?"): the question's word denied is a no;
        # its antonym denied ("Not slower" to "faster?") may mean "the same": a person reads it.
        if value == "no":
            return YesNo(unclear=True)
        value = "no"
    rest = said.group("rest")
    pause = next((i for i, char in enumerate(rest) if char in _PAUSE_CHARS), len(rest))
    continued, explanation = _words(rest[:pause]), rest[pause:]
    if continued != _words(after)[:len(continued)] and not _than_the_questions_own(rest[:pause], question):
        return YesNo(unclear=True)   # "Faster on one GPU": not the question's comparison
    contradiction = r"\b(?:yes|yeah|true)\b" if value == "no" else r"\b(?:no|not|never|false)\b|n['’]t\b"
    if _TURN.search(text) or re.search(r"\b(?:" + word + "|" + antonym + r")\b", explanation, re.I) \
            or re.search(contradiction, explanation, re.I) or _HEDGE.match(explanation) \
            or _REFUSAL.search(explanation):
        return YesNo(unclear=True)
    return YesNo(value, text.strip(" *_\"'"))



# -- how a count grows, to "does it grow with the number of GPUs?" ------------------------------
# HW3 Task 5 asks whether the transfers grow with the number of GPUs (its handout asks for "the
# relationship"), and students answer with the relationship: "Linearly: N - 1", "N - 1", "It
# grows linearly". Each says it grows: a yes. "Constant" / "It stays constant" is a no. Only a
# trend in the GPU count: the formula's one name is the GPU count (N, #GPUs, num_gpus), with a
# number beside it ("N" alone is a letter, and "n" is a no), growing ("1 - N" is not read); any
# other variable ("Linearly with DEPTH", "L - 1"), a "not", a doubt or another answer, and a
# person reads it. "Not linearly" (read as a no elsewhere: "is the speed-up proportional?") says
# how it grows, not whether: to this question it is unclear.
_GROWTH_QUESTION = re.compile(r"\bgrows?\b.*\bgpus\b", re.I | re.S)
_GPU_COUNT_NAME = r"(?:n|g|#\s*gpus|gpus|num_gpus|n_gpus|ngpus|(?:the\s+)?number\s+of\s+gpus)"
_GROWING_FORMULA = (r"\(?\s*(?:(?:\d+\s*[*×·]?\s*)" + _GPU_COUNT_NAME + r"(?:\s*[-−+]\s*\d+)?|"
                    + _GPU_COUNT_NAME + r"\s*[-−+]\s*\d+)\s*\)?(?:\s+transfers?)?")
_LINEAR = r"(?:linear(?:ly)?|proportional(?:ly)?)"
_WITH_GPUS = r"(?:\s+(?:with|to|in)\s+(?:the\s+)?(?:number\s+of\s+gpus|gpus|n))?"
_GROWS = (r"(?:(?:it|they|the\s+number\s+of\s+transfers|(?:the\s+)?transfers|(?:the\s+)?communication"
          r"(?:\s+overhead)?)\s+)?(?:grows?|increases?|rises?|scales?)\s+")
_GROWS_RE = re.compile(r"\s*(?:(?:" + _GROWS + r")?" + _LINEAR + _WITH_GPUS
                       + r"(?:\s*(?:[:,(\-–—]|\bas\b)\s*" + _GROWING_FORMULA + r"\s*\)?)?|"
                       + _GROWING_FORMULA + r")\s*[.!]?\s*", re.I)
_CONSTANT_RE = re.compile(r"\s*(?:(?:it|they|the\s+number\s+of\s+transfers|(?:the\s+)?transfers)\s+"
                          r"(?:stays?|is|are|remains?)\s+)?(?:constant|the\s+same)\s*[.!]?\s*", re.I)
_HOW_NOT_WHETHER = re.compile(r"\W*not\s+" + _LINEAR + r"\b", re.I)


def read_growth(text: str, question: str) -> YesNo | None:
    """A trend answering a question whether a count grows with the number of GPUs (see
    above): YesNo("yes"/"no") for one, YesNo(unclear) for "not linearly"; None where the
    question asks no such thing or the text is no trend (read_yes_no's business)."""
    text = (text or "").strip()
    if not _GROWTH_QUESTION.search(question or "") or len(text) > 200:
        return None
    if _GROWS_RE.fullmatch(text):
        return YesNo("yes", text.strip(" *_\"'"))
    if _CONSTANT_RE.fullmatch(text) and not text.lower().startswith("the same"):   # "the same" as what?
        return YesNo("no", text.strip(" *_\"'"))
    if _HOW_NOT_WHETHER.match(text):
        return YesNo(unclear=True)
    return None
