"""A cell of Practical 6's comparison table (DataParallel against DDP) as the comparison's word.

    words_for("data split", "By hand (DistributedSampler)")  -> "manual"
    words_for("gpu usage", "Mostly GPU 0")                   -> "imbalanced"
    words_for("gpu usage", "Same on every GPU")               -> "balanced"
    words_for("gpu usage", "GPU 0 first, then the others")    -> None (a person reads it)

The handout's words are 1 / Multiple, Automatic / Manual, Imbalanced / Balanced; students write
them in their own words, as a TA reads them: "by hand", "we split it", "DistributedSampler" are
manual; "by DataParallel", "scatter", "done for you" automatic; "mostly GPU 0", "higher on GPU
0", "skewed" imbalanced; "same on every GPU", "equal", "uniform" balanced. A "not" (or "no",
"never", "isn't", "non-", "without") before a word, with at most one word between, turns it:
"not balanced" is imbalanced, "not manual" automatic, "GPU 0 is not the bottleneck" balanced.
Nothing is guessed: a cell saying both words, or with a "not" that turns none of them, is read
as None, so its check waits for a person instead of marking it wrong.

A cell may say both methods' words: "automatic for DP, manual for DDP", "DP: automatic / DDP:
manual", "unlike DP (automatic), manual". Given its column (`method`, "dp" or "ddp"), only its
clauses about that column's method are read, as a TA reads them: a clause naming the other
method (and a bracket or a "where ..." after it) is not this cell's answer:

    words_for("data split", "automatic for DP, manual for DDP", "ddp")  -> "manual"
    words_for("data split", "automatic (DDP needs a sampler)", "dp")    -> "automatic"
"""
from __future__ import annotations

import re

from .numbers import whole_number_in

# Each aspect's words, as the feedback names them.
CHOICES = {"processes": "1 or multiple", "data split": "automatic or manual",
           "gpu usage": "balanced or imbalanced"}
_GPU0 = r"(?:gpu\s*(?:0|zero)|cuda\s*:?\s*0|(?:the\s+)?first\s+gpu|rank\s*0)"
_EVERY_GPU = r"(?:every|all|each|both|the\s+two)(?:\s+(?:the\s+)?(?:gpus?|ranks?|devices?|cards?))?"
# Each aspect's words, as regexes over the lower-cased cell.
_WORDS = {
    "data split": {
        "manual": (r"\bmanual(?:ly)?\b", r"\bby\s+hand\b", r"\bhand-?(?:made|written|split)\b",
                   r"\b(?:we|i|you)\s+(?:\w+\s+)?split\b", r"\b(?:myself|ourselves|yourself)\b",
                   r"\buser(?:-defined)?\b", r"\bexplicit(?:ly)?\b", r"\bdistributed\s*sampler\b",
                   r"\bsampler\b"),
        "automatic": (r"\bauto(?:matic(?:ally)?)?\b", r"\bby\s+(?:nn\.)?data\s*parallel\b",
                      r"\bscatter(?:s|ed|ing)?\b", r"\bdone\s+for\s+you\b", r"\bimplicit(?:ly)?\b"),
    },
    "gpu usage": {
        "imbalanced": (r"\bimbalanced?\b", r"\bunbalanced\b", r"\buneven(?:ly)?\b", r"\bunequal(?:ly)?\b",
                       r"\bskewed\b", r"\blopsided\b", r"\bbottleneck\b", r"\bbusier\b", r"\bheavier\b",
                       r"\b(?:more|most|over)\s*-?\s*loaded\b",
                       r"\b(?:mostly|mainly|primarily|largely|only)\s+(?:on\s+)?" + _GPU0,
                       r"\b(?:higher|more|heavier|larger|bigger|most)\s+(?:\w+\s+)?on\s+" + _GPU0,
                       _GPU0 + r"\s+(?:does|has|uses|holds|gets|is|carries|takes|needs|stores|"
                       r"does\s+the)\s+(?:much\s+|far\s+|a\s+lot\s+)?(?:more|most)\b"),
        "balanced": (r"\bbalanced\b", r"\beven(?:ly)?\b", r"\bequal(?:ly)?\b(?!\s+to\b)",
                     r"\bsimilar(?:ly)?\b(?!\s+to\b)", r"\buniform(?:ly)?\b", r"\bsymmetric(?:al)?\b",
                     r"\bsame\s+(?:\w+\s+)?(?:on|for|across|in|at|per)\s+" + _EVERY_GPU,
                     r"\b" + _EVERY_GPU + r"\s+(?:\w+\s+){0,2}(?:the\s+)?same\b(?!\s+as\b)"),
    },
}
_OPPOSITE = {"manual": "automatic", "automatic": "manual",
             "balanced": "imbalanced", "imbalanced": "balanced"}
# A word that turns what follows it, and what counts as "before" a word: right before it, or
# with one word between ("not as balanced", "not split by hand", "not the bottleneck").
_NEGATION = re.compile(r"\bnon-?(?!e\b)\s*|\b(?:not|no|never|without)\b|n['’]t\b")
_TURNS = re.compile(r"(?:\bnon-?\s*|(?:\b(?:not|no|never|without)|n['’]t)\s+(?:[\w.:-]+\s+)?)$")


def words_for(aspect: str, cell, method: str | None = None) -> str | None:
    """A table cell as the word the comparison uses ("1"/"multiple", "automatic"/"manual",
    "balanced"/"imbalanced"); None when it says none of them, or both. The cell's head (before
    a bracket, comma or dash) decides where it says one: "Balanced (unlike DP, where GPU 0 is
    the bottleneck)", "1 (one process, multiple threads)", "manual (not automatic)" (a probe
    found each read as its remark's word). `method`: the cell's column, "dp" or "ddp"; where
    the cell names a method, only its clauses about the column's method are read (_about)."""
    text = str(cell).strip().lower() if cell is not None else ""
    text = comparatives_as_words(aspect, text)
    clauses = _about(text, method) if method is not None else None
    if clauses is not None:
        # Each clause read on its own: clauses about this method that disagree ("manual for
        # DDP (automatic)") wait for a person; one that says neither word is a remark.
        said = {aspect_word(aspect, clause) for clause in clauses} - {None}
        return said.pop() if len(said) == 1 else None
    head = re.split(r"\s*(?:[(,;:/]|\s[-–—]\s)", text, maxsplit=1)[0]
    for part in (head, text):
        word = aspect_word(aspect, part)
        if word is not None:
            return word
    return None


def aspect_word(aspect: str, text: str) -> str | None:
    """The one word of `aspect` that `text` (lower case) says; None for none or both."""
    if not text:
        return None
    if aspect == "processes":
        return _process_count(text)
    said, turned_at = set(), set()
    for word, patterns in _WORDS[aspect].items():
        for pattern in patterns:
            for found in re.finditer(pattern, text):
                turn = _TURNS.search(text[:found.start()])
                if turn:
                    turned_at.add(turn.start())
                said.add(_OPPOSITE[word] if turn else word)
    # A "not" that turns none of the words ("the user does not split", "no GPU is idle") may
    # turn the cell's meaning: a person reads it.
    unexplained = [n for n in _NEGATION.finditer(text) if n.start() not in turned_at]
    if len(said) != 1 or unexplained:
        return None
    return said.pop()


# The two methods as students name them: "DP", "nn.DataParallel", "Data Parallel"; "DDP",
# "DistributedDataParallel" (test_practical6 reads "which is faster?" with the same names).
METHOD_NAMES = {"ddp": r"\b(?:distributed\s*data\s*parallel|ddp)\b",
                "dp": r"(?<!distributed)(?<!distributed )\b(?:nn\.)?(?:data\s*parallel|dp)\b"}
# Where a cell's clauses part: a comma, semicolon, slash or bar, a dash between spaces, and the
# words that set one method against the other ("manual, unlike DP", "automatic in DP but
# manual in DDP", "more balanced than DP"). Not a colon: "DP: automatic" is one clause.
_CLAUSE_BREAK = re.compile(r"\s*(?:[,;/|]|\s[-–—]+\s|\b(?=(?:but|whereas|while|unlike|vs\.?|versus|"
                           r"compared\s+(?:to|with)|as\s+opposed\s+to|than|and|whilst)\b))\s*")
# A clause that is only a method's name: the next clause says what it does.
_ONLY_A_NAME = re.compile(r"(?:(?:and|vs\.?|versus|for|in|with)\s+)?(?:the\s+)?(?:"
                          + "|".join(METHOD_NAMES.values()) + ")")
# A clause that goes on about what the clause before it named: "(unlike DP, where GPU 0 is
# the bottleneck)".
_GOES_ON = re.compile(r"(?:where|which|whose|because|since|as|so|hence|thus|i\.?e\.?|e\.?g\.?)\b")
# "by DataParallel" is the word automatic itself ("the split is done by DataParallel"), not a
# clause about DataParallel.
_WORD_NAMING_DP = re.compile(r"\bby\s+(?:nn\.)?data\s*parallel\b")


# -- a comparative: one method's usage against the other's ---------------------------------------
# Students fill the table by comparing: "less even than DDP" in DP's column, "uses the GPUs more
# evenly than DataParallel" in DDP's. With two methods and two words the less even one is the
# imbalanced one, as a TA reads it (these were read by their adjective alone: "less even" as
# balanced, a right answer marked wrong). Each comparative becomes the word it says, and what it
# says of the method after "than" a clause of its own: "less even than DDP" reads as "imbalanced;
# ddp balanced", so _about reads each column's side ("DP is less even than DDP" in DDP's column:
# balanced). Only words of the whole usage: a GPU's own word ("GPU 1 is less loaded") depends on
# which GPU it is said of, and "as even as DP", "same as DP", "similar to DP" compare nothing one
# way: these stay as they are (a person reads them), and a comparison with something else ("less
# even than on GPU 0") says no word.
_EVEN = r"(?:(?:load[- ])?balanced|even(?:ly)?|equal(?:ly)?|uniform(?:ly)?|symmetric(?:al(?:ly)?)?)"
_UNEVEN = r"(?:imbalanced|unbalanced|uneven(?:ly)?|unequal(?:ly)?|skewed|lopsided)"
# What may follow the comparative before its "than": "more evenly distributed across the GPUs".
_HOW_SPREAD = (r"(?:\s+(?:distributed|spread(?:\s+out)?|split|used|utili[sz]ed|shared|loaded))?"
               r"(?:\s+(?:across|over|among|between|on)\s+(?:the\s+|all\s+|both\s+)?(?:two\s+)?"
               r"(?:gpus|devices|ranks|cards))?")
_METHOD_NAMED = r"(?P<other>" + "|".join(METHOD_NAMES.values()) + ")"
_THAN = (r"(?:\s+than\s+(?:(?:in|with|for|under|using|on)\s+)?(?:the\s+)?" + _METHOD_NAMED
         + r"(?:['’]s)?(?:\s+(?:does|did|is|was|are|were))?\b)?")
_DEGREE = (r"(?:(?:much|far|way|a\s+lot|a\s+bit|a\s+little|slightly|significantly|noticeably|"
           r"considerably|clearly|even)\s+)?")
_COMPARATIVE = re.compile(
    r"\b" + _DEGREE + r"(?:(?P<more>more|less)\s+(?:(?P<even>" + _EVEN + ")|(?P<uneven>" + _UNEVEN + "))|"
    r"(?P<better>better|worse)(?:\s+(?:balanced|" + _EVEN + r"))?)\b" + _HOW_SPREAD + _THAN
    # A comparison with something else ("more even than on GPU 0", "less balanced than
    # expected"): no word for either column.
    + r"(?P<elsewhere>\s+than\b)?")
_AS_MUCH = re.compile(r"\b(?:not|never|\w+n['’]t)\s+(?:quite\s+|nearly\s+)?(?:as|so)\s+(?:(?P<even>" + _EVEN + ")|"
                      r"(?P<uneven>" + _UNEVEN + "))" + _HOW_SPREAD
                      + r"\s+as\s+(?:(?:in|with|for|under|using|on)\s+)?(?:the\s+)?" + _METHOD_NAMED
                      + r"(?:['’]s)?(?:\s+(?:does|did|is|was))?\b")


def comparatives_as_words(aspect: str, text: str) -> str:
    """`text` (lower case) with each comparative of GPU usage written as its word, and the
    method it is compared with as a clause of its own (see above); other aspects unchanged."""
    if aspect != "gpu usage":
        return text

    def said(found: re.Match, turned: bool) -> str:
        if found.group("even") or found.group("uneven"):
            word = "balanced" if found.group("even") else "imbalanced"
            if turned != (found.groupdict().get("more") == "less"):
                word = _OPPOSITE[word]
        else:
            word = "balanced" if found.group("better") == "better" else "imbalanced"
        other = found.group("other")
        return f"{word}; {other} {_OPPOSITE[word]}" if other else word

    def comparative(found: re.Match) -> str:
        # "not more even than DP" says less than the comparative: left as written.
        if _TURNS.search(text[:found.start()]):
            return found.group(0)
        return "(compared with something else)" if found.group("elsewhere") else said(found, False)

    text = _AS_MUCH.sub(lambda found: said(found, True), text)
    return _COMPARATIVE.sub(comparative, text)


def _about(text: str, method: str) -> list[str] | None:
    """The clauses of the cell `text` about `method`: a clause naming the method, or naming
    neither (the cell's own subject); a bracket, or a clause going on ("where ..."), without a
    name of its own is about what the clause before it named. None where it names no method."""
    owners, kept = [], []
    for clause, remark in _clauses(text):
        named = {m for m, pattern in METHOD_NAMES.items()
                 if re.search(pattern, _WORD_NAMING_DP.sub("", clause))}
        if len(named) == 1:
            owner = named.pop()
        elif named:
            owner = "both"   # "DP and DDP both balanced": about this column too
        else:
            owner = owners[-1] if owners and (remark or _GOES_ON.match(clause)) else None
        owners.append(owner)
        if owner in (None, "both", method):
            kept.append(clause)
    return None if all(owner is None for owner in owners) else kept


def _clauses(text: str) -> list[tuple[str, bool]]:
    """(clause, whether it stands in a bracket) for each clause of `text`, a bracket's clauses
    after the clause it follows."""
    parts, depth, current = [], 0, ""
    for char in text:
        opens, closes = char in "([", char in ")]" and depth > 0
        depth_before, depth = depth, depth + opens - closes
        if (opens and depth_before == 0) or (closes and depth == 0):
            parts.append((current, closes))   # a bracket's text stands on its own
            current = ""
        else:
            current += char
    parts.append((current, depth > 0))
    clauses = []
    for part, remark in parts:
        for clause in filter(None, (c.strip() for c in _CLAUSE_BREAK.split(part))):
            if clauses and _ONLY_A_NAME.fullmatch(clauses[-1][0]):
                # "DP and DDP both balanced", "DP/DDP: balanced": one clause about both.
                clause = f"{clauses.pop()[0]} {clause}"
            clauses.append((clause, remark))
    return clauses


def _process_count(text: str) -> str | None:
    count = whole_number_in(text)
    if count == 1 or re.search(r"\b(?:single|one)\s+process\b|^(?:single|one)$", text):
        return "1"
    # "Mutiple" is the handout's own table's spelling.
    if text in ("n", "n processes") or any(
            w in text for w in ("multi", "muti", "many", "several", "one per", "per gpu")):
        return "multiple"
    return "multiple" if count is not None and count > 1 else None
