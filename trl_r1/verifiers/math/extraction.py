"""Find the final answer in a model completion and in a dataset's gold field.

The completion's answer is, in this order: the content of the (last) ``<answer>`` block (or the text after
``</think>``, see `trl_r1.verifiers.format.extract_answer`), and within it the last ``\\boxed{}``, else the last
"the answer is ..." / "Answer:" / "####" statement, else a closing "Therefore $X$ is the answer." claim, else the
whole answer block. An answer that does not commit to one value (hedge words in it or around its box, "3 or 5", a
question mark, boxes joined by "or") is rejected here, before any math; boxes side by side (separated by layout
only) are one multi-valued answer.

Two answer policies (`ANSWER_POLICIES`) decide what happens when none of these markers is present:

* ``"marked"`` (the RL reward's default): no marker, no answer. A number somewhere in prose is never read as the
  answer, so a policy cannot be rewarded for ending its reasoning on the right number by chance.
* ``"bare"`` (`verify`'s default, for grading): also a completion that is nothing but an answer (``-5``,
  ``x = 3``, ``7,425,000``, ``28 percent``, ``$\\frac{1}{2}$``), a one-sentence statement of a value ("The
  angle is 90."), a closing sentence that states the question's subject ("So the probability that Alice wins
  the game is 2/3."), or one whose last line is an answer line (``Answer $9$``, ``**Answer** 9``). Prose with a
  number in it is still no answer, and hedges and negations ("about 5", "not 5", "at least 5") are rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..format import ANSWER_OPEN, extract_answer
from .screening import _TEX_TOKEN, canonical, or_joins_relations
from .words import _NUMBER_WORD, NOT_BARE_AFTER, OPERATED_DIGITS, digits_for_words, spelled_number

MAX_CHAINED_BOXES = 20  # boxes listed one after another that still form one answer
MAX_AFTERWORD_CHARS = 120  # text after an answer read for hedges in a completion without an <answer> block
MAX_WRAPPERS = 20  # boxes and math delimiters nested around one answer (\boxed{$\boxed{5}$}); deeper is no answer
MAX_GOLD_CHARS = 1000  # a longer gold without a box or "####" marker is a solution we cannot read an answer from

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BRACE = re.compile(r"[{}]")
_TOKEN_BOX = re.compile(  # a box of one token without braces: "\\boxed 5", "\\boxed5", "\\boxed -12.5", "\\boxed A",
    # followed by the end of the math or the sentence (a number also by its unit), never by more of an expression
    # ("\\boxed 3 + 4" is no answer) or by prose ("put it in \\boxed A to mark it")
    r"\\(?:boxed|fbox)(?:\s+|(?=[-\d]))(?:(-?(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?))(?![\d.,]\d|\w)(?=\s*[A-Za-z]{2})|"
    r"(-?(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)|[A-Za-z])(?![\d.,]\d|\w)(?=\s*(?:$|[.,;:!$]|\\[\])])))"
)
_UNCLOSED_END = re.compile(r"\$|\\\]|\\\)|\n|[.!](?=\s)|(?<![\d.])[.!]$")  # where an unclosed box's math or sentence ends
_CUT_OFF = re.compile(r",$|\\[A-Za-z]*$")  # the end of a text that must continue: a list, a command
_CLOSING_LINE_BREAK = re.compile(r"(?:\\\\\*?(?:\[[^\[\]]{0,20}\])?|\\(?:newline|cr|break|linebreak)(?![A-Za-z]))$")
MAX_UNCLOSED_CHARS = 200  # an unclosed box is read only when the text ends within this many characters of it
_PART_LETTERS = ["a", "b", "c", "d", "e", "f", "g", "h"]  # a question's parts, each list in its own order:
_PART_NUMERALS = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii"]  # "(i)" after "(h)" is no ninth letter
_PART_NUMBERS = ["1", "2", "3", "4", "5", "6", "7", "8", "9"]
_NUMBERED_PART = (  # a part's label: "(b)", "b)", "**(b)**", "(ii)", "(2)", "2)", "Part 2:", "Part (b)", "Part II."
    r"(?:\*\*|__)?(?:(?i:part)\s+(?:\((?P<part>[a-h1-9]|i{1,3}|iv|vi{0,3})\)|(?P<named>(?i:[a-h]|i{1,3}|iv|vi{0,3})|[1-9])\b)|"
    r"(?<![A-Za-z0-9\\(+\-/^=.])(?<![^*]\*)(?<![^_]_)\(?(?P<label>[a-h1-9]|i{1,3}|iv|vi{0,3})\))\s*(?:\*\*|__)?\s*[:.]?\s*(?:\*\*|__)?"
)
_BOX_SEPARATOR = re.compile(  # between boxes of one answer: a unit word, math delimiters, punctuation, and/or
    r"^(?:\s*[a-zA-Z]{2,}(?=\s*(?:,|;|and\b|\\text\{\s*and)))?"  # "\\boxed{1} papers and \\boxed{2} bins"
    r"(?:\s|\$|,|;|\\[()\[\]]|\b[a-zA-Z](?:_\{?\w+\}?)?\s*\$?\s*=|\.?\s*" + _NUMBERED_PART + r"|\b[a-zA-Z]{2,20}\s*\$?\s*[=:]|\\quad|\\qquad|"
    r"\\text\{[^{}]{0,24}\b(?:and|or)\s*\}|\band\b|\bor\b|\\,|\\;)*$"
)
_DOUBTED_REASON = re.compile(r"(?i)\b(?:yes|no|not|might|could|may|or|thought|unless|except)\b|\?")
_ASSERTED = re.compile(  # "Janet makes $18 per day.", "There are 24 ways.": a subject, a plain verb, then the number
    r"(?P<subject>[A-Z][A-Za-z' ]{0,60}?)\s+(?:is|are|was|were|has|have|had|makes?|made|gets?|got|needs?|needed|takes?|"
    r"took|costs?|earns?|earned|pays?|paid|spends?|spent|saves?|saved|sells?|sold|buys?|bought|weighs?|travels?|"
    r"traveled|travelled|runs?|ran|reads?|scores?|scored|owns?|collects?|collected|equals?|contains?|holds?|uses?|"
    r"used|receives?|received|drives?|drove|walks?|walked|eats?|ate)\s+(?P<number>\$?-?\d[\d,]*(?:\.\d+)?)"
    r"(?:\s+[A-Za-z%']+){0,5}\s*\.?"
)
_NOT_ASSERTED = re.compile(  # words that negate, bound, hedge, restrict or index the sentence's number
    r"(?i)\b(?:not|never|no|nobody|none|neither|nor|hardly|barely|scarcely|fails?|failed|might|could|should|would|may|"
    r"can|must|seems?|appears?|apparently|supposedly|allegedly|presumably|likely|probably|about|around|roughly|"
    r"approximately|nearly|almost|up|least|most|over|under|more|less|than|plus|minus|only|except|if|unless|when|"
    r"maybe|perhaps|first|step|case|chapter|part|page|year|estimated?)\b"
)
_FIRST_PERSON = re.compile(r"(?i)\b(?:I|I'm|I'd|I've|my|me|believe|think|suppose|reckon|expect|feel)\b")
_PART_LABEL = re.compile(  # "(b) ", "**b)** ", "Part 2: ", "median = ", "y $= $" before a part's box
    _NUMBERED_PART + r"\s*\$?\s*$|\b(?P<word>[a-zA-Z]{2,20})\s*\$?\s*[=:]\s*\$?\s*$|"
    r"(?<![\w\\])(?P<variable>[a-zA-Z](?:_\{?\w+\}?)?)\s*\$?\s*=\s*\$?\s*$"
)
_NOT_PARTS = frozenset(  # labels that judge, revise or check a value rather than name a part
    "answer check checked first final try attempt wrong right correct incorrect old new before after initial guess "
    "estimate result revised corrected previous earlier later original alternative also then now so".split())
_STATEMENT = re.compile(  # "the (final) answer is", "Answer:", "**Final Answer**: ", "the answer to the problem is",
    # "the answer would be", "the answer is therefore", a "Final Answer" heading over its value, GSM8K's ####
    r"(?i)\banswer(?:\s+(?:to|for)\s+(?:the|this)\s+(?:question|problem))?\**\s*"
    r"(?:is|:|=|equals|(?:must|will|would|should)\s+be|turns\s+out\s+to\s+be|comes\s+out\s+to)\s*:?\**"
    r"(?:\s*(?:therefore|thus|hence|then|clearly|simply|just|indeed)\b\s*,?)?|"
    r"\bfinal\s+answer\**[ \t]*:?\**[ \t]*(?=\n)|####"
)
_QUALIFIED_ANSWER = re.compile(  # a word before a statement's "answer" that makes it not the one given
    r"(?i)\b(?:wrong|incorrect|false|tempting|naive|mistaken|common|tentative|preliminary|initial|possible|candidate|"
    r"likely|approximate|estimated|partial|intermediate|guessed|trial|draft)\s+(?:final\s+)?$"
)
_NEW_TURN = re.compile(  # where a completion runs on into a new chat turn: a template's turn tokens, a "User:" line
    r"<\|(?:im_end|im_start|eot_id|eom_id|eot|start_header_id|begin_of_text|end_of_text|endoftext|end|user|assistant|"
    r"system)\|>|<(?:end|start)_of_turn>|</?s>|<｜(?:User|Assistant|end▁of▁sentence|begin▁of▁sentence)｜>|\[/?INST\]|"
    r"(?:^|\n)[ \t#*]*(?:(?i:human|user|assistant)\s*:|###\s*(?i:instruction|input|human|user|response|question)\b)"
)
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mbox)\s*\{([^{}]*)\}")
_BOX_SENTENCE = re.compile(r"(?i)\b(?:is|are|was|were|equals?|answer|total|gives?|get|makes?)\b")
_ARTICLE = re.compile(r"^(\\text\{\s*)?(?:a|an|the|A|An|The)\s+(?=[a-zA-Z][a-zA-Z ]*\}?$)")  # \text{a circle}
_WORDS_IN_TEXT = re.compile(  # an answer that is words set as text: \text{No}, \textbf{Yes}, \mathrm{Evelyn}
    r"\\(?:text|textbf|textit|textrm|textsf|mathrm|mbox)\s*\{\s*([A-Za-z][A-Za-z' -]*[A-Za-z])\s*\}"
)
_ARGUMENT = rf"(?:\{{[^{{}}]*\}}|\s?{_TEX_TOKEN})"  # one TeX argument: a group of one level, or one token
_ROOT_TOKEN = rf"(?:\d+(?![.\d])|(?!\d){_TEX_TOKEN})"  # a root's brace-less argument: a digit run or one token
_SCRIPT_COMMAND = re.compile(  # a script whose argument is one command with its own: 2^\frac12, 2^\sqrt{2}, x_\frac ab
    rf"([\^_])\s*(\\(?:[dt]?frac\s*{_ARGUMENT}\s*{_ARGUMENT}|sqrt\s*(?:\[[^\[\]]{{1,20}}\])?\s?(?:{_ROOT_TOKEN}|\{{[^{{}}]*\}})))"
)
_INDEXED_ROOT = re.compile(  # a root with an index and a brace-less argument: \sqrt[3]2, \sqrt[3]27 (a digit run, as
    # `screening` reads \sqrt13), \sqrt[n]x, \sqrt[3]\pi; \sqrt[3]2.5 is no token and stays unread
    rf"\\sqrt\s*(\[[^\[\]]{{1,20}}\])\s?({_ROOT_TOKEN})"
)
_BOLD = re.compile(r"(?<![\w)\]}.])\s?\*\*|\*\*(?![-\w(\\{])")  # markdown **bold**, not Python's power x**2
_SIZED = re.compile(r"\\(?:left|right)(?![a-zA-Z])\s*\.?")  # \left( ... \right. sizes a delimiter or hides one
_SENTENCE_END = re.compile(r"\.(?=\s|$)|\n")
_CLOSING_CLAIM = re.compile(r"(?i)(?<!\s)\s+is\s+(?:the|our)\s+(?:final\s+)?(?:answer|solution)\s*[.!]?\s*$")
_CONCLUSION = re.compile(  # what may open a claim: a conclusion word, or the start of a sentence (not a label's colon)
    r"(?i)(?:(?:^|[.!\n])\s*(?:so|thus|hence|therefore|consequently|finally)\s*[,:]?|(?:^|(?<!\.)[.!]|\n))\s*$"
)
_SPAN_SEPARATOR = re.compile(r"\s*(?:,\s*(?:(?:and|or)\b\s*)?|(?:and|or)\b\s*)")  # between listed math spans
_CLOSE_QUOTE = {'"': '"', '\\"': '\\"', "“": "”", "``": "''"}
_OPEN_QUOTE = re.compile(r'\\"|"|“|``')
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|(?<!\\)\$(.+?)(?<!\\)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_REMARK = re.compile(  # "42 (since 6 times 7 is 42)", "6 (not 7)", "8 (option C)"; "6 (or 7)" stays a hedge
    r"(?<!\s)\s+\((?!or\b|maybe\b|perhaps\b|possibly\b|probably\b)[a-z]{2,}\b[^()]*\)$"
)
_HEDGE = re.compile(
    r"(?i)\b(?:or|maybe|perhaps|possibly|probably|either|guess|not\s+sure|unsure|uncertain|unclear|"
    r"might\s+be|could\s+be|cannot\s+be\s+determined|undetermined)\b|\?"
)


ANSWER_POLICIES = ("marked", "bare")
MAX_BARE_CHARS = 200  # a longer unmarked line is prose, not a bare answer
MAX_BARE_WORDS = 3  # words outside math a bare answer may hold: units ("square units"), a text answer ("odd")
_ANSWER_LINE = re.compile(  # "Answer $9$", "**Final answer** 9", "## Answer: 9" as the last line
    r"(?i)^[#*\s]*(?:final\s+)?answer\b[*:.\s]*(?P<value>\S.*)$"
)
_ONE_SENTENCE = re.compile(r"^[A-Z][a-z]*(?:\s+[a-zA-Z$\\{}_^()]+){0,6}?\s+(?:is|are|equals)\s+(?P<value>.+?)\.?$")
_NOT_A_VALUE = re.compile(  # words that make a line prose, a bound or a hedge rather than a value
    r"(?i)\b(?:not|no|never|wrong|incorrect|false|except|than|least|most|between|about|around|approximately|"
    r"roughly|nearly|almost|over|under|above|below|if|unless|think|assume|suppose|try|is|are|was|were|be|"
    r"equals?|answer|so|then|thus|hence|therefore|because|since|we|it|this|that|get|got|find|found)\b"
)


_RETRACTION = re.compile(  # words after an answer that take it back for another value ("Wait, actually it is 6")
    r"(?i)\b(?:wait|actually|correction|instead|mistake|oops|should|correct\s+(?:value|answer|result))\b|"
    r"(?:^|[.;:,!(])\s*no\b(?=\s*(?:[,.;:!—-]|$|wait|it|that|actually))"  # "No, it is 6", not "No other value works"
)
_ADDITION = re.compile(  # words after an answer that may add a value to it: an extra solution ("$13$ works too")
    r"(?i)\b(?:also|too|as\s+well(?:\s+as)?|plus|along\s+with|another|other|additionally|gives?)\b"
)
_JOINING = re.compile(r"(?i)plus|along with|as well as|gives?")  # additions that join what stands right before them to a value
_REJECTED = re.compile(  # a clause that rejects the value it names ("the other root, $-3$, is extraneous")
    r"(?i)\b(?:extraneous|rejected|reject|invalid|discard\w*|exclude[sd]?|ruled\s+out|fails?|impossible|"
    r"does\s*n[o']?t\s+(?:work|satisfy)|not\s+(?:valid|allowed|a\s+solution))\b"
)
_ARITHMETIC = re.compile(  # a computation in prose or math ("12 = 3 \\cdot 4", "$12/3 = 4$", "48+24 = 72")
    r"-?\d+(?:\.\d+)?(?:\s*(?:[-+*/=×·:]|\\(?:times|cdot|div)\b)\s*\(?-?\d+(?:\.\d+)?\)?)+"
)
_CONTEXT_HEDGE = re.compile(  # doubts and alternatives around a marked answer, before or after it, inside its span
    r"(?i)\b(?:or|alternatively|else|maybe|perhaps|possibly|probably|either(?!\s+way)|guess(?:ing)?|unsure|uncertain|"
    r"tentative(?:ly)?|not\s+(?:sure|certain|confident)|might|may\s+(?:be|have)|could\s+(?:also\s+)?be|"
    r"if\s+(?:I\s*['’]?\s*a?m|I\s+am|this\s+is|that\s+is|it\s+is)\s+(?:right|correct)|if\s+correct|"
    r"assuming\s+(?:no|I|my|the\s+above)\b[^.]{0,20}?(?:mistakes?|errors?|correct|right)|"
    r"not\s+(?:\d+\s*%|entirely|completely|totally|fully|quite|very|too|at\s+all)\s+(?:sure|certain|confident)|"
    r"(?:low|little|no)\s+confidence|unverified|not\s+(?:checked|verified)|(?:can\s*['’]?\s*t|cannot)\s+be\s+(?:sure|certain)|"
    r"if\s+I\s+(?:did|got|have|computed)\b[^.]{0,40}?\b(?:right|correctly)|hard\s+to\s+say|"
    r"if\s+memory\s+serves|hopefully|lol|I\s+(?:think|believe|suspect|suppose|reckon))\b|\?"
)
_APPROXIMATION = re.compile(  # an estimate, read in the answer's own sentence only ("This matches our estimate" later
    # does not hedge it); "the most likely total" is a noun, "approximately 3.14" a rounding (see `_hedged_context`)
    r"(?i)\b(?:estimate[sd]?|approx(?:imately|imate)?|roughly|(?<!most\s)(?<!least\s)likely)\b"
)
_REJECTION = re.compile(  # after the answer only: its rejection or retraction ("\\boxed{5} is wrong", "scratch that");
    # before it these words belong to the problem ("the number of false statements", "after rechecking each step")
    r"(?i)\b(?<!no\s)(?<!without\s)(?<!any\s)(?:wrong|incorrect|false|mistaken|erroneous|errors?|mistakes?|"
    r"mis-?(?:added|read|calculated|computed|counted)|"
    r"not\s+(?:the|our|a|my)\s+(?:final\s+)?(?:answer|solution|result)|not\s+(?:correct|right|valid|it)|"
    r"(?:is|was|are)n\s*['’]?\s*t\s+(?:correct|right|valid|true|it|the\s+(?:final\s+)?answer)|scratch|kidding|sorry|"
    r"redo|re-?check\w*|reconsider\w*|retract\w*|second\s+thought|then\s+again)\b|"
    r"(?:^|[.;:,!\x00(])\s*no\b(?=\s*(?:[,.;:!—-]|$|wait|it|that|actually))"
)
_PROVISIONAL = re.compile(  # a time word that makes the answer right before it a first, provisional one ("So at
    # first, the answer is 5.", "Initially I got \\boxed{5}", "The answer for now is 5"); "Janet had 10 apples at first,
    # so she has \\boxed{5}" is a derivation: the word must qualify the answer itself, right before it
    r"(?i)(?:\b(?P<time>at\s+first|initially|originally|previously|earlier|at\s+the\s+(?:start|outset|beginning)|"
    r"to\s+begin\s+with|for\s+now|for\s+the\s+moment|so\s+far)\s*,?\s*"
    r"(?:(?:I|we)\s+(?:\w+\s+)?(?:thought|got|had|found|computed|calculated|believed|said|wrote|guessed|obtained)\s+"
    r"(?:that\s+)?(?:it\s+(?:was|is)\s+)?)?(?:(?:the|my|our)\s+(?:final\s+)?(?:(?:answer|result|solution)\s*"
    r"(?:is|was|seemed|seems|looked|appeared|would\s+be)?\s*(?:to\s+be\s*)?)?)?|"
    r"\b(?:answer|result|solution)\s*,?\s*(?:(?:is|was|seemed)\s+)?(?P<later>at\s+first|initially|originally|previously|earlier|"
    r"for\s+now|for\s+the\s+moment|so\s+far)\s*,?\s*(?:(?:is|was|seemed|would\s+be)\s*(?:to\s+be\s*)?)?)[:=]?\s*$"
)
_PROVISIONAL_AFTER = re.compile(  # right after the answer: "\\boxed{5} for now", "$5$, for the moment"
    r"(?i)^[\s$,;:()\\\]]*for\s+(?:now|the\s+moment|the\s+time\s+being)\b"
)
_TRAILING_PART = re.compile(_NUMBERED_PART + r"$")  # a part's label ending a text: "Initially, (a) ... (b) "
_REFERENCE_BACK = re.compile(  # "as computed", "as we found", "as shown" right before a time word: it refers back
    r"(?i)\bas\s+(?:(?:I|we)\s+)?(?:have\s+)?(?:computed|calculated|found|shown|showed|derived|obtained|"
    r"established|determined|proved|proven|seen|saw|noted|stated|mentioned)\s*$|"
    r"\b(?:the|our|this|that)\s+\w+\s+(?:derived|computed|calculated|obtained|found|shown)\s*$|"  # "the equation derived earlier"
    r"\b(?:the|all\s+the)\s+(?:results?|analysis|work|steps|calculations?|computations?)\s*$"  # "the results so far"
)
_BEFORE_ANSWER = re.compile(  # right before the answer: a negation ("is not \\boxed{5}", "Not \\boxed{5}")
    r"(?i)(?:\b(?:not|never|cannot)|n\s*['’]\s*t)\s*(?:be\s+|equal\s+(?:to\s+)?|equals?\s+)?[\s:,]*$"
)
_BOUND = re.compile(  # a bound or estimate the answer is stated as ("The answer is at least \\boxed{5}", "≥ \\boxed{5}"):
    # after a copula, a colon or at the sentence's start, not a quantity's own ("We need at least 12 chairs")
    r"(?i)(?:^|\b(?:is|are|was|were|be|equals?|answer|it\s*['’]\s*s)\b|[:=])\s*(?:\w+\s+)?\$?\s*"
    r"(?P<bound>(?:at\s+(?:least|most)|around|about|approximately|roughly|nearly|almost|under|over|below|above|near|"
    r"within|up\s+to|close\s+to|(?:no\s+)?(?:less|more|greater|fewer|smaller|larger|bigger|higher|lower)\s+than)"
    r"\s*(?:equal\s+(?:to\s+)?|equals?\s+)?|>=?|<=?|≥|≤|\\[lg]eq?\b|\\[lg]t\b)[\s:,$]*$"
)
_BOUND_AFTER = re.compile(  # a bound right after the answer: "\\boxed{12}+", "\\boxed{12} at minimum", "12 or more"
    r"(?i)^[\s,]*(?:\+|or\s+(?:more|fewer|less|greater|higher|lower|above|below)\b|"
    r"at\s+(?:the\s+)?(?:least|most|minimum|maximum)\b|(?:minimum|maximum)\s*[.!]?\s*$)"
)
_BOUND_WORD = re.compile(  # any bound word: a labelled part holding one keeps its words (`_part_value`); stricter than
    # `_BOUND_PHRASE`, which refuses a whole answer and so must let "less" alone be a text answer; "min" is minutes,
    # a unit (`screening.physical_unit`), never a bound
    r"(?i)\b(?:more|less|fewer|greater|higher|lower|minimum|maximum|max|least|most)\b"
)
_BOUND_PHRASE = re.compile(  # a bound written into the answer itself, in words: "5 \\text{ at least}", "5 or more",
    # "5 max", "5 tops", "5 at the most"; a word that names the value is none: an extremum with an article or as a
    # label ("5 (the maximum)", "Minimum: 5", "\\text{maximum} = 5", "n_{max} = 5"), "up to" a word ("5 (up to rotation)")
    r"(?i)(?<!\\)\b(?:at\s+(?:the\s+)?(?:least|most|max(?:imum)?|min(?:imum)?)|"
    r"or\s+(?:more|less|fewer|greater|higher|lower|above|below)|(?:no\s+)?(?:more|less|fewer|greater)\s+than|"
    r"(?<!\bthe\s)(?<!\ba\s)(?<!\bits\s)(?<!\bour\s)(?<!_\{)(?:minimum|maximum|max)\b(?!\}?\.?\s*(?:=|:|is\b|value|of\b))|"
    r"tops|up\s+to\b(?!\s+(?:an?\s+|the\s+)?(?!(?:" + _NUMBER_WORD + r")\b)[A-Za-z]{2,}))\b"
)
_ROUNDING = ("about", "around", "approximately", "roughly", "nearly", "almost", "near", "close to")  # of a decimal
_CASE_SPLIT = re.compile(  # what makes an opening "if" clause a case of the answer ("If $a>0$"), not a derivation
    r"(?i)[<>≤≥]|\\(?:[lg]eq?|neq?)(?![a-zA-Z])|\b(?:odd|even|positive|negative|nonzero|non-zero)\b"
)
_CONDITION = re.compile(  # a condition the answer depends on: "when $n$ is odd", "if $a>0$", "for odd $n$"
    r"(?i)\b(?:when(?:ever)?|if|unless|otherwise|assuming|provided|suppos(?:e|ing)|in\s+(?:the\s+)?case|as\s+long\s+as|"
    r"so\s+long\s+as|given\s+that|depending\s+on|for\s+(?:odd|even|positive|negative|nonzero|non-zero|large|small))\b"
)
_ATTAINED = re.compile(  # where an extremum is reached, not a case of the answer ("attained when $x = 2$")
    r"(?i)\b(?:attained|achieved|reached|obtained|occurs|holds|equality)\s+(?:\w+\s+){0,2}$"
)
_LATEX_SPACING = re.compile(  # markup that only lays out boxes: line breaks, spaces, rules, HTML tags
    r"\\\\(?:\[[^\]]*\])?|\\[a-zA-Z]+\*?(?:\{[^{}]*\}|\[[^\]]*\])*|\\.|<[^<>]{0,20}>"
)
_CLOSING_STATEMENT = re.compile(  # the last sentence states the subject: "So the probability that Alice wins the game
    # is 2/3.", "The fraction that is shaded is therefore $\\frac{3}{4}$.", "So there are 120 ways to arrange them."
    r"(?i)(?:^|(?<=[.!:\n]))\s*(?P<conclusion>(?:so|thus|therefore|hence|finally|consequently|in\s+conclusion|in\s+total|overall)\b\s*,?\s+)?"
    r"(?:(?P<subject>the\s+[^.!?\n$=:;]{1,150})\s+(?:is|are|equals|(?:will|would|must)\s+be)"
    r"(?:\s+(?:therefore|thus|hence|then|exactly))?\s+(?P<value>[^\n]{1,200}?)|"
    r"there\s+(?:are|is|were|was)\s+(?P<count>-?\d[\d,]*(?:\.\d+)?)(?:\s+[a-z]+){1,12}?)\s*[.!]?\s*$"
)
_CLOSING_ACTOR = re.compile(  # "So Natalia sold 72 clips altogether in April and May.": a named subject, one number
    r"(?:^|(?<=[.!:\n]))\s*(?i:so|thus|therefore|hence|finally|in\s+conclusion|in\s+total|overall)\s*,?\s+"
    r"(?!(?i:we|i|you|let|it|this|that|there|the|then)\b)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?(?P<verb>(?:\s+[a-z]+){1,3}?)\s+"
    r"(?P<number>-?\$?\d[\d,]*(?:\.\d+)?)(?P<rest>(?:\s+[A-Za-z']+){1,12})\s*[.!]?\s*$"
)
MAX_CLOSING_CHARS = 500
MAX_REGION_CHARS = 100_000  # the answer region's tail that is read: a final answer closes it, and every pass is linear
MAX_REPEATS = 64  # a unit of 1-4 characters repeated more often is cut to this many and `_CUT` (whitespace: no mark)
MAX_DIGIT_RUN = 1_000  # digits in a row kept (a 450-digit integer is an answer; 50,000 digits are an attack)
_CUT = "\ue000"  # marks where a run was cut (a private-use character: no text holds it); an answer holding it is none
_REPEATED_RUN = re.compile(r"(.{1,4}?)\1{%d,}" % MAX_REPEATS, re.S)  # 50,000 spaces, "if if if ...", "\\(\\(...", "111..."  # the tail of a completion read for a closing statement
_NOT_A_LABEL = re.compile(  # labels (and one-sentence subjects) that propose or bound a value rather than answer
    r"(?i)\b(?:guess|estimate|estimated|attempt|check|step|hint|note|example|wrong|draft|candidate|possib\w*|sub-?total|"
    r"partial|first|intermediate|bound|trial|hypothes[ie]s|conjecture|claim|assumption)\b"
)


@dataclass(frozen=True)
class Answer:
    """An extracted final answer (`text`), or the reason there is none (`text is None`); `parts`: labelled parts as
    written, units kept, where `text` joins their values without them (``(12, 5)`` for ``(a) 12 m (b) 5 km``), so
    each part's unit can still be compared (`screening.units_differ`)."""

    text: str | None
    reason: str | None = None
    parts: tuple[str, ...] | None = None


def boxed_contents(text: str) -> list[tuple[int, int, str]]:
    """Every ``\\boxed{...}`` / ``\\fbox{...}`` as (start, end, content), braces balanced, a closing line break
    (``\\\\``) dropped; also ``\\boxed 5`` / ``\\boxed5`` (one number or letter, no braces) and a box the text
    ends in without closing it (`_unclosed_box`). Other unclosed boxes are skipped.

    >>> [c for _, _, c in boxed_contents(r"so \\boxed{\\frac{1}{2}} and \\fbox{3} or \\boxed 4 or $\\boxed{5$")]
    ['\\\\frac{1}{2}', '3', '4', '5']
    """
    return list(_boxed_contents(text))


@lru_cache(maxsize=8)
def _boxed_contents(text: str) -> tuple[tuple[int, int, str], ...]:
    """`boxed_contents`, cached: one completion's region is searched for boxes several times."""
    closing, opened = {}, []  # matching braces in one pass: nested unclosed boxes cost O(n), not O(n^2)
    for brace in _BRACE.finditer(text):
        i = brace.start()
        if brace.group() == "{":
            opened.append(i)
        elif opened:
            closing[opened.pop()] = i
    boxes = [(m.start(), closing[m.end() - 1] + 1, m.end(), None) for m in _BOX.finditer(text) if m.end() - 1 in closing]
    boxes += [(m.start(), m.end(), 0, m.group(1) or m.group(2)) for m in _TOKEN_BOX.finditer(text)]
    found = []
    for start, end, opened_at, token in sorted(boxes):
        if not (found and start < found[-1][1]):  # a box inside a box is its content (sliced once: nesting costs O(n))
            found.append((start, end, _without_line_break(token if token is not None else text[opened_at: end - 1])))
    unclosed = _unclosed_box(text, opened)
    if unclosed and not (found and unclosed[0] < found[-1][1]):
        found.append(unclosed)
    return tuple(found)


def _without_line_break(content: str) -> str:
    """A box's content without the line breaks that close it (``\\boxed{5 \\\\}``, ``\\\\[2pt]``, ``\\newline``,
    ``\\cr``): layout, not math."""
    content = content.strip()
    while True:
        stripped = _CLOSING_LINE_BREAK.sub("", content).rstrip()
        if stripped == content:
            return content
        content = stripped


def _unclosed_box(text: str, unmatched: list[int]) -> tuple[int, int, str] | None:
    """The box a text ends in without its closing brace (``$\\boxed{42$.``, ``\\boxed{42. That is all``,
    ``\\boxed{\\frac{1}{2}``), up to where its math or sentence ends, its braces closed, when it is short and one
    paragraph; `unmatched` are the positions of the braces never closed. A completion that ends inside its box
    (``\\boxed{42``) answers what the box holds: one cut off at the length limit (``\\boxed{425}`` as
    ``\\boxed{42``) is the trainer's to drop (`mask_truncated_completions`, on in the GPU recipes), not a guess the
    verifier can make. A list or a command that runs into the end (``\\boxed{1,``, ``\\boxed{\\frac``) is
    unfinished: no answer."""
    if not unmatched or len(text) - unmatched[-1] > 2 * MAX_UNCLOSED_CHARS:
        return None
    unclosed = set(unmatched)
    box = None
    for match in _BOX.finditer(text, max(0, len(text) - 3 * MAX_UNCLOSED_CHARS)):
        box = match if match.end() - 1 in unclosed else box
    if box is None:
        return None
    rest = text[box.end():]
    end = _UNCLOSED_END.search(rest)
    content = rest[: end.start()] if end else rest
    answer = _without_line_break(content)
    if len(content) > MAX_UNCLOSED_CHARS or not answer or not end and _CUT_OFF.search(answer):
        return None
    depth = answer.count("{") - answer.count("}")
    return box.start(), box.end() + len(content), answer + "}" * max(depth, 0)


def _cut_runs(completion: str) -> str:
    """The completion with each long run of a repeated short unit cut to `MAX_REPEATS` copies and `_CUT`: no answer
    holds such a run, and the extraction's patterns, linear on text, can be quadratic on one (a regex retried at each
    of 50,000 spaces); cut, every completion is read in time whatever it repeats."""
    return _REPEATED_RUN.sub(_cut_run, completion)


def _cut_run(run: re.Match) -> str:
    """One run cut: brackets (signed or not) and terms of a sum or list kept whole (exact arithmetic reads any depth and any
    length with explicit stacks), whitespace cut
    without a mark (it is layout), digits past `MAX_DIGIT_RUN`, anything else past `MAX_REPEATS`, marked."""
    unit = run.group(1)
    if (not unit.strip("(){}[]+-") and re.search(r"[(){}[\]]", unit)  # ((1)), -(-(-(5)))
            or re.search(r"[\w.]", unit) and re.search(r"[-+*/^=,]", unit)):  # 1+1+...+1
        return run.group()
    if unit.isspace():
        return unit * MAX_REPEATS
    limit = MAX_DIGIT_RUN if unit.isdigit() else MAX_REPEATS
    return run.group() if len(run.group()) <= limit * len(unit) else unit * limit + _CUT


def _first_turn(completion: str) -> str:
    """The completion up to where it runs on into a new chat turn (``<|im_end|>``, ``<|eot_id|>``, a "User:" line):
    the next turn's question and answers are not this completion's answer."""
    turn = _NEW_TURN.search(completion)
    return completion[: turn.start()] if turn else completion


def _sentence_value(content: str) -> Answer | None:
    """The value a box holding a sentence states (``\\boxed{The answer is 12}`` -> 12), or None when the box holds no
    sentence with a number in it. A sentence with two different numbers (``\\boxed{12 apples and 13 pears}``) or a
    hedge states none."""
    plain = _TEXT_WRAPPER.sub(r" \1 ", content)
    if len(re.findall(r"(?<![\\A-Za-z])[A-Za-z]{2,}", plain)) < 2 or not _BOX_SENTENCE.search(plain):
        return None
    numbers = {float(n) for n in re.findall(r"\d+(?:\.\d+)?", digits_for_words(plain).replace(",", ""))}
    if not numbers:
        return None
    hedge = _HEDGE.search(plain)
    if hedge:
        return Answer(None, f"hedged: {hedge.group().lower()}")
    if len(numbers) > 1:
        return Answer(None, "a box with two different numbers")
    if OPERATED_DIGITS.search(plain):
        return Answer(None, "a number with an operator word or 'of the': not its value")
    value = _closing_claim(plain) or (_statement(plain) if _STATEMENT.search(plain) else _copula_value(plain))
    number = re.findall(r"-?\d[\d,]*(?:\.\d+)?", digits_for_words(value))
    if len(number) == 1 and not _NOT_A_VALUE.search(re.sub(r"(?i)\b(?:is|are|was|were|it|that|this|we)\b", "", value)):
        return Answer(number[0])  # "There are seven", "We need 12 chairs"
    return Answer(value)


def _asserted_number(block: str) -> Answer | None:
    """The number an answer block's one sentence asserts with a plain verb ("Janet makes $18 per day.", "There are
    24 ways."); None for a sentence that negates, bounds, hedges, restricts or indexes it ("Janet might make $18",
    "up to $18", "$18 plus tips", "Step 2 gives the total") or speaks in the first person."""
    asserted = _ASSERTED.fullmatch(block.strip())
    if asserted is None or _NOT_ASSERTED.search(block) or _HEDGE.search(block) or _FIRST_PERSON.search(block):
        return None
    return Answer(asserted["number"].lstrip("$"))


def _labelled_value(block: str) -> Answer | None:
    """The value of an answer block that is one label and its value (``Minimum: 5``, ``Total: $18$``), read as an
    unmarked labelled answer is (`_bare_value`); None for another block, or a label that proposes, bounds or hedges
    (``Guess: 5``, ``Initially: 5``)."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z ]{0,30}:[ \t]*\S[^\n]*", block.strip()):
        return None
    value = _bare_value(block)
    return None if value is None else Answer(value)


def _yes_no(text: str) -> Answer | None:
    """A yes/no answer given with its reason (``No, because 2047 = 23 \\times 89.``) is the yes or the no."""
    match = re.match(r"(?i)\s*(yes|no)\s*[,.;:!—–-]\s*(?=\S)", text)
    if not match:
        return None
    reason = text[match.end():]
    doubt = _DOUBTED_REASON.search(reason) or _HEDGE.search(reason) or _RETRACTION.search(reason)
    return None if doubt else Answer(match.group(1).capitalize())  # "No, because maybe not.": no commitment


def _last_boxed(text: str, allow_or: bool = False) -> Answer | None:
    """The last box, joined with the boxes right before it when only separators lie between them.

    Boxes chained by "and" or commas are one multi-valued answer (``3, 5``); boxes chained by "or" are a hedge
    unless `allow_or` (the gold itself lists alternatives with "or").
    """
    boxes = boxed_contents(text)
    if not boxes:
        return None
    chain = [boxes[-1]]  # from the last box backwards
    for box in reversed(boxes[-MAX_CHAINED_BOXES:-1]):
        between = text[box[1]: chain[-1][0]]
        if not _layout_only(between) and (len(between) > 40 or not _BOX_SEPARATOR.match(between)
                                          or _RETRACTION.search(between)):
            break  # reasoning or an explicit self-correction lies between: the later box is the answer
        if not allow_or and re.search(r"\bor\b", between):
            return Answer(None, "hedged: boxes joined by 'or'")
        chain.append(box)
    chain.reverse()
    order = _part_order(text, chain)
    if order == []:  # labelled, but not as distinct parts ("Wrong: \\boxed{12}, Right: \\boxed{5}"): the last box
        return Answer(chain[-1][2])
    if order:  # every part in order, a repeated value too ("(a) 12, (b) 5, (c) 5" is three parts), without its unit
        parts = tuple(chain[index][2] for index in order)
        return Answer(f"({', '.join(_part_value(part) for part in parts)})", parts=parts)
    return Answer(", ".join(dict.fromkeys(content for _, _, content in chain)))  # a box repeated is one value


def _part_order(text: str, chain: list[tuple[int, int, str]]) -> list[int] | None:
    """The order in which chained boxes answer the parts of a question (``(a) \\boxed{12}, (b) \\boxed{5}``,
    ``Part 1: \\boxed{12}. Part 2: \\boxed{5}``, ``Mean $= \\boxed{6}$, median $= \\boxed{5}$``, ``x $= \\boxed{12}$,
    y $= \\boxed{5}$``), as indices into `chain`: the reading order, except that variables are put in their own
    order (``y = 12, x = 5`` is the pair (5, 12); ``x_2 = 3, x_1 = 2`` is (2, 3)); None where no box is labelled;
    [] where the labels are not distinct parts (a check, a first try and its revision, a part answered twice or
    skipped, numbered parts out of order)."""
    before = [text[max(0, chain[0][0] - 40): chain[0][0]]] + [text[a[1]: b[0]] for a, b in zip(chain, chain[1:])]
    found = [_PART_LABEL.search(piece) for piece in before]
    if not any(found[1:]):
        return None
    if not all(found):
        return []
    kinds = {next(kind for kind in ("part", "named", "label", "word", "variable") if label[kind]) for label in found}
    labels = [next(name for name in label.groups() if name).lower() for label in found]
    if kinds == {"variable"} and len(set(labels)) == 1:
        return None  # "x = \\boxed{3}, x = \\boxed{-3}": the values of one unknown, a list
    if len(set(labels)) != len(labels) or any(word in _NOT_PARTS for word in labels):
        return []
    reading = list(range(len(labels)))
    if kinds <= {"part", "named", "label"}:  # numbered parts: one list's order from its start
        return reading if any(labels == order[: len(labels)] for order in (_PART_LETTERS, _PART_NUMERALS, _PART_NUMBERS)) else []
    if kinds == {"variable"}:
        return sorted(reading, key=lambda index: _variable_order(labels[index]))
    return reading if kinds == {"word"} else []


def _variable_order(name: str) -> tuple[str, int, int, str]:
    """Where a variable comes in its unknowns' order: by letter, then by subscript, numbers by value (x_2 before
    x_10)."""
    letter, _, subscript = name.partition("_")
    subscript = subscript.strip("{}")
    return (letter, 0, int(subscript), "") if subscript.isdigit() else (letter, 1, 0, subscript)


_VALUE_WORD = re.compile(  # a word after a part's number that changes or judges its value, never a unit to drop:
    # "5 thousand", "5 squared", "5 dozen", "5 factorial", "5 thousandths", "5 invalid", "5 initially"
    rf"(?i)\b(?:{_NUMBER_WORD}|(?:ten|hundred|thousand|million|billion)ths?|squared|cubed|dozens?|scores?|factorial|reciprocals?|inverse|invalid|impossible|"
    r"unknown|undefined|initially|originally|first|before|earlier|previously|percent|times|power|root)\b"
)


def _part_value(part: str) -> str:
    """A labelled part's value without its unit (``12\\text{ cm}`` is 12), read as `screening.canonical` reads
    one answer; a part whose words hedge, bound, judge or condition it (``5\\text{ or more}``, ``5\\text{ at
    least}``) keeps them, to be refused as written."""
    words = " ".join(re.findall(r"[A-Za-z]{2,}", _TEXT_WRAPPER.sub(r" \1 ", part)))
    if _HEDGE.search(words) or _NOT_A_VALUE.search(words) or _judgement(words) or _CONDITION.search(words) \
            or _BOUND_WORD.search(words) or _VALUE_WORD.search(words):
        return part
    return canonical(part)


def _layout_only(between: str) -> bool:
    """Whether the text between two boxes holds no words or values, only layout (``\\\\``, ``~``, ``\\hspace{1cm}``,
    ``<br>``, `` | ``, `` / ``, ``\\mid``): then the boxes are listed side by side as one multi-valued answer, never
    read as the last box alone."""
    rest = _LATEX_SPACING.sub(" ", between)
    return (len(between) <= 200 and not re.search(r"[A-Za-z0-9]", rest) and not _RETRACTION.search(between)
        and not _ADDITION.search(between))


def _hedged_context(region: str, start: int, end: int, block: bool) -> str | None:
    """The hedge or alternative around the marked answer ``region[start:end]`` (``Maybe \\boxed{42}``,
    ``\\boxed{42} (could also be 41)``, ``\\boxed{42}; alternatively 41``), if any: read outside boxes and math,
    in the answer's own sentence before it and after it in the rest of an ``<answer>`` `block`, or, in a
    completion without one, the next `MAX_AFTERWORD_CHARS` (a closing chat note is not part of the answer)."""
    chars = list(region)
    for s, e in [(s, e) for s, e, _ in boxed_contents(region)] + [m.span() for m in _MATH_SPAN.finditer(region)]:
        chars[s:e] = " " * (e - s)
        if region[s:e].rstrip("$)]\\ ").endswith("."):  # "... = 0.$ By the formula": the sentence ends
            chars[e - 1] = "."
    sentences = re.compile(r"(?<![\d\\])[.!;](?=\s|$)|\n")
    before = sentences.split("".join(chars[:start]))[-1]
    after = "".join(chars[end:]) if block else "".join(chars[end: end + MAX_AFTERWORD_CHARS])
    own = f"{before} \x00 {sentences.split(after)[0]}"  # the answer's own sentence
    approximation = _APPROXIMATION.search(own)
    if approximation and (re.search(r"\d\.\d", region[start:end]) or re.search(r"(?i)\bexact", own)):
        approximation = None  # "approximately $\\boxed{3.14}$" states a rounding; "(which is exact here)" no estimate
    hedge = _CONTEXT_HEDGE.search(f"{before} \x00 {after}") or approximation or _REJECTION.search(f"\x00 {after}")
    if hedge:
        return re.sub(r"\s+", " ", hedge.group().lower()).strip(".;:,!\x00( ")
    provisional = _PROVISIONAL.search(before)
    if provisional and provisional["time"] and _REFERENCE_BACK.search(before[: provisional.start("time")]):
        provisional = None  # "As computed earlier, the answer is 5": the time word cites earlier work, the answer stands
    if provisional:
        return "provisional: " + " ".join((provisional["time"] or provisional["later"]).split()).lower()
    later = _PROVISIONAL_AFTER.match(region[end:]) or _provisional_parts(before)
    if later:
        return "provisional: " + " ".join(later.group().strip(" $,;:()\\]").split()).lower()
    if _BEFORE_ANSWER.search(before):
        return "negated: " + " ".join(_BEFORE_ANSWER.search(before).group().split()).lower()
    clause = sentences.split(region[:start])[-1]  # unmasked: "The answer is $\\geq$ \\boxed{5}"
    bound = _BOUND.search(clause)
    bound = bound and " ".join(bound.group("bound").split()).lower()
    if bound and not (bound in _ROUNDING and re.search(r"\d\.\d", region[start:end])):  # "approximately 3.14"
        return f"bounded: {bound}"
    if _BOUND_AFTER.match(region[end:]):
        return "bounded: " + " ".join(_BOUND_AFTER.match(region[end:]).group().strip(" ,").split()).lower()
    opening = re.match(r"\s*(?:\W\s*)?(\w+(?:\s+case)?)", clause)  # "If $a>0$ the answer is": a case opens it
    if opening and re.fullmatch(r"Is|Are|Does|Do|Could|Can|Should|Would|Will", opening.group(1)):
        return "a question"  # "Is the answer \\boxed{5}"
    condition = _case_after(region[end:]) or (
        opening and _CONDITION.fullmatch(opening.group(1)) and _CASE_SPLIT.search(clause) and opening)
    return f"conditional: {condition.group().strip().lower()}" if condition else None


def _provisional_parts(before: str) -> re.Match | None:
    """A time word right before labelled parts (``Initially, (a) \\boxed{3} (b) \\boxed{8}``): `before`, the answer's
    sentence up to its last part with the boxes blanked, read without the parts' labels as `_PROVISIONAL` reads the
    words before one answer."""
    rest, labels = before, 0
    for _ in range(MAX_CHAINED_BOXES):
        rest = rest.rstrip()
        label = _TRAILING_PART.search(rest[-40:])
        if label is None:
            break
        rest, labels = rest[: len(rest) - len(rest[-40:]) + label.start()], labels + 1
    provisional = _PROVISIONAL.search(rest) if labels else None
    return provisional if provisional and provisional["time"] else None


def _judgement(text: str) -> re.Match | None:
    """A hedge, estimate or rejection in a remark on the answer ("5 (I think)", "5 (wrong)", "5 (approx.)")."""
    return _CONTEXT_HEDGE.search(text) or _APPROXIMATION.search(text) or _REJECTION.search(text)


def _case_after(rest: str) -> re.Match | None:
    """A condition after the answer, in its sentence, that makes it one case of several ("\\boxed{5} when $n$ is
    odd", "$5$ if $x>0$ and $-5$ otherwise"): one with a relation or parity in it, or that names the other case.
    Where an extremum is attained ("attained when $x = 2$") or what holds for all $n$ is no case split."""
    sentence = re.split(r"(?<![\d\\])[.!;](?=\s|$)|\n", rest)[0]
    for condition in _CONDITION.finditer(sentence):
        if _ATTAINED.search(sentence[: condition.start()]):
            continue
        if re.match(r"(?i)otherwise|depending|for\s", condition.group()) or _CASE_SPLIT.search(sentence[condition.end():]):
            return condition
    return None


def _statement(text: str) -> str | None:
    """The value in the last "the answer is X" / "Answer: X" / "#### X" statement, up to the sentence's end.

    In "Answer: the largest $n$ is 34" the value is what follows the last "is".
    """
    matches = list(_STATEMENT.finditer(text))
    if not matches:
        return None
    rest = text[matches[-1].end():].lstrip()
    math = _leading_math(rest)
    if math:
        return math[0]
    end = _SENTENCE_END.search(rest)
    return _copula_value(rest[: end.start()] if end else rest)


def _closing_claim(region: str) -> str | None:
    """The math of a closing "Therefore $X$ is the solution." / "$X$ is our answer." sentence: the answer statement
    the other way round; without math, a number in digits or words ("Thus forty-two is the answer."). Only a
    conclusion word or the sentence's start may open it ("I think $X$ is the answer" commits to nothing)."""
    claim = _CLOSING_CLAIM.search(region)
    spans = list(_MATH_SPAN.finditer(region[: claim.start()])) if claim else []
    if spans and spans[-1].end() == claim.start():
        if not _CONCLUSION.search(region[: spans[-1].start()]):
            return None
        return next(g for g in spans[-1].groups() if g is not None).strip()
    if not claim:
        return None
    sentence = re.split(r"(?<!\d)[.!](?!\d)|\n", region[max(0, claim.start() - MAX_BARE_CHARS): claim.start()])[-1]
    subject = re.sub(r"(?i)^\s*(?:so|thus|hence|therefore|consequently|finally)\b\s*,?", "", sentence).strip()
    return spelled_number(subject) or (subject if re.fullmatch(r"-?\d[\d,]*(?:\.\d+)?", subject) else None)


def _closing_statement(region: str) -> str | None:
    """The value of a closing sentence that states the question's subject ("So the probability that Alice wins
    the game is 2/3.", "So there are 120 ways to arrange them."): "the <subject> is <value>" or "there are <n> ...",
    with nothing after it, opened by a conclusion word or alone in its region. A subject that proposes or bounds
    ("the first guess is 5"), a hedge, or a value in prose is no answer."""
    tail = region[-MAX_CLOSING_CHARS:].strip()
    statement = _CLOSING_STATEMENT.search(tail)
    if statement is not None and not statement["conclusion"] and (len(region.strip()) > len(tail) or tail[: statement.start()].strip()):
        return None  # without "so"/"thus", only a region that is this one sentence ("48 + 24 = 72. The total is 72." is prose)
    actor = _CLOSING_ACTOR.search(tail) if statement is None else None
    if actor is not None and not _NOT_A_VALUE.search(actor["verb"] + actor["rest"]) and not _HEDGE.search(actor.group()):
        return actor["number"].replace("$", "")
    if statement is None or statement["count"] is None and (
        _NOT_A_LABEL.search(_subject_head(statement["subject"])) or _HEDGE.search(statement["subject"])
        or _PROVISIONAL.search(statement["subject"] + " is")  # "the answer so far is 5"
    ):
        return None
    if statement["count"] is not None:  # "there are 120 ways ...": a count, unless hedged or bounded
        return None if _NOT_A_VALUE.search(tail[statement.end("count"):]) else statement["count"]
    return _bare_value(statement["value"])


def _subject_head(subject: str) -> str:
    """A subject up to its first clause or complement: "the probability that the first marble is red" is about "the
    probability", so "first" there proposes nothing ("the first guess" does)."""
    return re.split(r"(?i)\b(?:that|of|which|who|whose|when|where|if|for|in)\b", subject, maxsplit=1)[0]


def _leading_math(rest: str) -> tuple[str, int] | None:
    """The math a statement opens with, and where it ends: one span, or spans listed with commas, "and" or "or"
    (``$12$ and $13$`` is the answer "12 and 13", never "12" alone), possibly in quotes (``"$12$ and $13$"``)."""
    quote = _OPEN_QUOTE.match(rest)
    end = quote.end() if quote else 0
    values = []
    while True:
        math = _MATH_SPAN.match(rest, end)
        if not math:
            break
        values.append(next(g for g in math.groups() if g is not None).strip())
        end = math.end()
        separator = _SPAN_SEPARATOR.match(rest, end)
        if not separator or not _MATH_SPAN.match(rest, separator.end()):
            break
        word = " ".join(separator.group().split())
        values.append(word + " " if word.startswith(",") else f" {word} ")  # "12, 134" stays two numbers
        end = separator.end()
    if not values:
        return None
    closing = quote and re.compile(r"\s*" + re.escape(_CLOSE_QUOTE[quote.group()])).match(rest, end)
    return "".join(values), closing.end() if closing else end


def _copula_value(sentence: str) -> str:
    """The value a sentence states: what follows its last "is" ("The largest $n$ is 34" -> "34"), without a
    closing remark in parentheses ("42 (since 6 times 7 is 42)" -> "42"); in a worded statement without math, its
    one number, in digits or in words ("Jane started growing it 3 hours ago" -> "3", "there are forty-two" -> "42")."""
    remark = _REMARK.search(sentence.strip())
    sentence = sentence.strip()[: remark.start()] if remark and not _judgement(remark.group()) else sentence.strip()
    copula = list(re.finditer(r"\bis\b", sentence))
    value = sentence[copula[-1].end():].strip() if copula and sentence[copula[-1].end():].strip() else sentence
    digits = digits_for_words(value)
    numbers = [n for n in re.finditer(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?%?(?![\w.])", digits)]
    if any(NOT_BARE_AFTER.match(digits, n.end()) for n in numbers):
        return value  # "7 squared", "1 of the options": the number is not the value stated
    numbers = [n.group() for n in numbers]
    worded = len(re.findall(r"[A-Za-z]{2,}", digits)) >= 3 and not re.search(r"[$\\=<>^]", value)
    worded = worded and not _HEDGE.search(value)  # "maybe 42 apples in total" keeps its hedge
    if worded and len(numbers) == 1 and not _NOT_A_VALUE.search(re.sub(r"\b(?:is|are|was|were|it|that|this|we)\b", "", value)):
        return numbers[0]
    return value


def _revised(after: str, answer: str) -> bool:
    """Whether the text after the answer takes it back for another value ("Wait, actually it is 6") or adds one to it
    ("$13$ works too", "Another solution is $13$"); a check that repeats the answer ("Wait, let me double-check...
    yes, 5."), a computation ("which also gives $12/3 = 4$") or a rejected value ("the other root, $-3$, is
    extraneous") does not."""
    stated = set(re.findall(r"\d+(?:\.\d+)?", digits_for_words(answer).replace(",", "")))
    after = digits_for_words(after, lone_one=False)  # "Wait, actually it is forty-three"
    retraction = _RETRACTION.search(after)
    if retraction:
        sentence = max((m.end() for m in _SENTENCE_END.finditer(after, 0, retraction.start())), default=0)
        if any(n not in stated for n in re.findall(r"\d+(?:\.\d+)?", after[sentence:].replace(",", ""))):
            return True
    for addition in _ADDITION.finditer(after):
        if _JOINING.fullmatch(" ".join(addition.group().split())) and re.search(r"\d", after[: addition.start()]):
            continue  # "\\boxed{72} clips, 48 in April plus 24 in May": it joins other values, not the answer
        sentence = max((m.end() for m in _SENTENCE_END.finditer(after, 0, addition.start())), default=0)
        if any(n not in stated for n in _offered(after[sentence:])):  # "$13$ works too": before the word
            return True
    return False


def _offered(text: str) -> list[str]:
    """The numbers `text` offers as values: not those in a computation or in a clause that rejects them."""
    clauses = [c for c in re.split(r"[.;\n]", text) if not _REJECTED.search(c)]
    return re.findall(r"\d+(?:\.\d+)?", _ARITHMETIC.sub(" ", " ".join(clauses).replace(",", "")))


def _bare_value(text: str) -> str | None:
    """`text` when it is nothing but a value (math, a number with a unit, a short text answer), else None."""
    text = text.strip().rstrip(".").strip()
    remark = _REMARK.search(text)  # "12 (since 3 times 4 is 12)"
    if remark and not _judgement(remark.group()):
        text = text[: remark.start()].strip()
    if not text or len(text) > MAX_BARE_CHARS or "\n" in text.strip("$"):
        return None
    if re.match(r"[$\s]*(?:~|≈|\\approx|\\sim|[<>≤≥]|\\[lg]eq?(?![a-zA-Z])|\\[lg]t(?![a-zA-Z]))", text):  # "~5", ">= 5"
        return None
    outside = re.sub(r"\\text\{[^{}]*\}", " ", _MATH_SPAN.sub(" ", text))  # words inside math / \text are math
    outside = re.sub(r"\\[a-zA-Z]+", " ", outside)
    words = re.findall(r"[A-Za-z]{2,}", outside)
    if len(words) > MAX_BARE_WORDS or _NOT_A_VALUE.search(outside):
        return None
    if re.search(r"[.!](?=\s+\S)", re.sub(r"\d\.\d", "0", outside)):  # two sentences
        return None
    if re.fullmatch(r"\[[^\[\],]+\](?:\s*=\s*\[[^\[\],]+\])*", text):  # Geometry3K's "[90]", "[\\sqrt{25}] = [5]"
        return "=".join(value.strip() for value in re.findall(r"\[([^\[\],]+)\]", text))  # a chain ends on its value
    labelled = re.fullmatch(r"(?P<label>[A-Za-z][A-Za-z ]{0,30}):\s*(?P<value>\S.*)", text)  # "Result: $5$"
    if labelled:
        if _NOT_A_VALUE.search(labelled["label"]) or _NOT_A_LABEL.search(labelled["label"]) \
                or _PROVISIONAL.search(labelled["label"] + ":"):  # "Initially: 5", "Answer for now: 5"
            return None
        return _bare_value(labelled["value"])
    return text


def _bare_answer(region: str) -> str | None:
    """The value of an unmarked answer region (policy "bare"): the whole region when it is only a value, the
    value a one-sentence statement gives ("The angle is 90."), or the value on a closing answer line."""
    region = region.strip()
    lines = [line for line in region.splitlines() if line.strip()]
    if not lines:
        return None
    line = _ANSWER_LINE.match(lines[-1].strip())
    if line:
        return _bare_value(_BOLD.sub("", line.group("value")))
    opening = list(re.finditer(r"(?im)^[#*\s]*(?:final\s+)?answer\b[*:.\s]*", region))
    if opening and _MATH_SPAN.fullmatch(region[opening[-1].end():].strip().rstrip(".")):  # Answer \\[ 9 \\]
        return region[opening[-1].end():].strip().rstrip(".")
    if _MATH_SPAN.fullmatch(region.rstrip(". ")):  # one display block, possibly over several lines
        return region.rstrip(". ")
    if len(lines) > 1:
        return None
    value = _bare_value(region)
    if value is not None:
        return value
    sentence = _ONE_SENTENCE.match(region)
    subject = region[: sentence.start("value")] if sentence else ""
    if not sentence or _NOT_A_LABEL.search(subject) or _PROVISIONAL.search(subject):  # "The first guess is 5."
        return None
    return _bare_value(sentence.group("value"))


def final_answer(completion: str, allow_or: bool = False, policy: str = "marked") -> Answer:
    """The answer a completion commits to, or why it has none ("or" is a hedge unless `allow_or`).

    `policy` is "marked" (an answer marker is required) or "bare" (an unmarked completion that is only an answer
    counts too; see the module docstring).

    >>> final_answer("<think>2+3=5</think><answer>5</answer>").text
    '5'
    >>> final_answer(r"<think>...</think> so the result is \\boxed{4} and the answer is \\boxed{5}.").text
    '5'
    >>> final_answer("Adding them, the answer is 12 apples. Done.").text
    '12 apples'
    >>> final_answer(r"The answer is \\boxed{3} or \\boxed{4}").reason
    "hedged: boxes joined by 'or'"
    >>> final_answer("<answer>maybe 7</answer>").reason
    'hedged: maybe'
    >>> final_answer("7,425,000").reason, final_answer("7,425,000", policy="bare").text
    ('no final answer', '7,425,000')
    >>> final_answer("So we get 5 apples in total.", policy="bare").reason
    'no final answer'
    """
    if policy not in ANSWER_POLICIES:
        raise ValueError(f"answer policy must be one of {ANSWER_POLICIES}, got {policy!r}")
    if not isinstance(completion, str):
        return Answer(None, "completion is not text")
    region = _cut_runs(extract_answer(_first_turn(completion))[-MAX_REGION_CHARS:])
    answer = _last_boxed(region, allow_or)
    if answer is not None and answer.text:
        answer = _sentence_value(answer.text) or answer
    statements = list(_STATEMENT.finditer(region))
    if answer is not None and statements and statements[-1].start() > boxed_contents(region)[-1][1]:
        answer = None  # "... \\boxed{200} ... The final answer is $10,455$": the later statement is the answer
    if answer is not None and answer.text:
        after = region[boxed_contents(region)[-1][1]:]
        claim = _closing_claim(after)  # "\\boxed{5}. Therefore $6$ is the answer."
        if _revised(after, answer.text) or (claim is not None and claim != answer.text):
            return Answer(None, "hedged: revised after the answer")
    if answer is not None and answer.text:
        hedge = _hedged_context(region, boxed_contents(region)[-1][0], boxed_contents(region)[-1][1], ANSWER_OPEN in completion)
        if hedge and not (allow_or and hedge == "or"):
            return Answer(None, f"hedged: {hedge}")
    if answer is None:
        statement = _statement(region)
        qualified = statement is not None and _QUALIFIED_ANSWER.search(region, max(0, statements[-1].start() - 40),
                                                                       statements[-1].start())
        if qualified:  # "The wrong answer would be 5", "A tempting answer is 5": not the answer given
            return Answer(None, f"hedged: {' '.join(qualified.group().split()).lower()} answer")
        if statement is not None:
            rest = region[statements[-1].end():].lstrip()
            math = _leading_math(rest)
            end = math[1] if math else (_SENTENCE_END.search(rest).end() if _SENTENCE_END.search(rest) else len(rest))
            if _revised(rest[end:], statement):
                return Answer(None, "hedged: revised after the answer")
            offset = len(region) - len(rest)
            hedge = _hedged_context(region, statements[-1].start(), offset + end, ANSWER_OPEN in completion)
            if hedge and not (allow_or and hedge == "or"):
                return Answer(None, f"hedged: {hedge}")
            answer = Answer(statement)
        elif _closing_claim(region) is not None:
            answer = Answer(_closing_claim(region))
        elif policy == "bare" and _closing_statement(region) is not None:  # prose: "marked" needs a marker
            answer = Answer(_closing_statement(region))
        elif ANSWER_OPEN in completion:  # the block, or the value its one sentence states ("The total is 42.")
            sentence = not _SENTENCE_END.search(region.rstrip(". ")) and re.match(r"[A-Z][a-z]*\s[^\d=]*\bis\b", region)
            stated = None if sentence or _CONDITION.search(region) else (
                _yes_no(region) or _asserted_number(region) or _labelled_value(region))
            answer = stated if stated is not None else Answer(_copula_value(region) if sentence else region)
        elif policy == "bare" and _bare_answer(region) is not None:
            answer = Answer(_bare_answer(region))
        else:
            return Answer(None, "no final answer")
    if answer.text is None:
        return answer
    if _CUT in answer.text:
        return Answer(None, f"answer holds a unit repeated over {MAX_REPEATS} times")
    text = _strip_wrappers(answer.text)
    if text is None:
        return Answer(None, f"answer wrapped in over {MAX_WRAPPERS} boxes or math delimiters")
    if not text:
        return Answer(None, "empty answer")
    words = _HEDGE.finditer(re.sub(r"\\text\{\s*(or)\s*\}", r" \1 ", text))
    allow_or = allow_or or or_joins_relations(text)
    hedge = next((w.group().lower() for w in words if not (allow_or and w.group().lower() == "or")), None)
    remark = re.search(r"\(([^()]*[A-Za-z]{2,}[^()]*)\)\s*\}?$", text)  # "5 (low confidence)", "5 \\text{ (wrong)}"
    hedge = hedge or (remark and _judgement(remark.group(1)) and _judgement(remark.group(1)).group())
    if hedge:
        return Answer(None, f"hedged: {hedge.lower()}")
    bound = _BOUND_PHRASE.search(_TEXT_WRAPPER.sub(r" \1 ", text))  # "\boxed{5 \text{ at least}}": a bound, no value
    if bound:
        return Answer(None, f"bounded: {' '.join(bound.group().split()).lower()}")
    if OPERATED_DIGITS.search(_TEXT_WRAPPER.sub(r" \1 ", text)):  # "7 squared", "1 of the options"
        return Answer(None, "a number with an operator word or 'of the': not its value")
    return Answer(text, parts=answer.parts)


def gold_answer(gold: object) -> Answer:
    """The reference answer from a dataset field: a bare or boxed answer, a boxed solution, or GSM8K's ``#### X``.

    >>> gold_answer(r"\\boxed{\\frac{\\pi}{4}}").text
    '\\\\frac{\\\\pi}{4}'
    >>> gold_answer("Natalia sold 48/2 = 24 clips in May.\\n#### 72").text
    '72'
    >>> gold_answer(" ").reason
    'empty gold'
    """
    if isinstance(gold, bool) or gold is None:
        return Answer(None, "gold is missing")
    if isinstance(gold, (int, float)):
        gold = repr(gold) if isinstance(gold, float) else str(gold)
    if not isinstance(gold, str):
        return Answer(None, f"gold is a {type(gold).__name__}, not text")
    answer = _last_boxed(gold, allow_or=True)  # chained boxes: \\(\\boxed{1}\\) and \\(\\boxed{-2}\\) is "1, -2"
    if answer is None and "####" in gold:
        answer = Answer(gold.rsplit("####", 1)[1].strip())
    if answer is None and _STATEMENT.search(gold):  # "answer is 0.6666667", a solution ending "The final answer is $28\\%$"
        answer = Answer(_statement(gold))
    if answer is None:
        if len(gold) > MAX_GOLD_CHARS:
            return Answer(None, "gold is a long text without a boxed or #### answer")
        answer = Answer(gold)
    text = _strip_wrappers(answer.text or "")
    if text is None:
        return Answer(None, f"gold wrapped in over {MAX_WRAPPERS} boxes or math delimiters")
    return Answer(text, parts=answer.parts) if text else Answer(None, "empty gold")


def _strip_wrappers(text: str) -> str | None:
    """Remove math delimiters, markdown bold, a final period, an unmatched ``\\left`` and an article around an answer;
    a number in words is its value (`words.spelled_number`). Layers (``\\boxed{$\\boxed{42}$}``) are peeled in a
    loop, not by recursion, at most `MAX_WRAPPERS` of them: deeper nesting is no answer (None), whatever its depth."""
    for _ in range(MAX_WRAPPERS):
        text = text.strip()
        math = _MATH_SPAN.fullmatch(text)
        if math:
            text = next(g for g in math.groups() if g is not None)
        text = _BOLD.sub("", text).replace("\\$", "").replace("$", "").strip()
        text = re.sub(r"(?<!\\right)(?<!\\left)[.;]+$", "", text).strip()  # not \right. (a null delimiter)
        inner = boxed_contents(text)
        if not (len(inner) == 1 and inner[0][:2] == (0, len(text))):  # \boxed{\boxed{42}}: one more layer
            break
        text = inner[0][2]
    else:
        return None
    if len(re.findall(r"\\left(?![a-zA-Z])", text)) != len(re.findall(r"\\right(?![a-zA-Z])", text)):
        text = _SIZED.sub("", text)  # an unmatched \left( sizes nothing: the delimiter alone is the math
    words = _WORDS_IN_TEXT.fullmatch(text)  # \text{No} is the word No, as \boxed{No} is
    text = words.group(1) if words else _braced_arguments(text)
    return spelled_number(text) or _ARTICLE.sub(r"\1", text)  # "forty-two", "the fifth term"; "\text{a circle}" is "circle"


def _braced_arguments(text: str) -> str:
    """`text` with the brace-less arguments TeX reads the parser needs braced: a root's index then one token
    (``\\sqrt[3]2`` is ``\\sqrt[3]{2}``) and a script holding one command (``2^\\frac12`` is ``2^{\\frac12}``,
    ``2^\\sqrt2`` is ``2^{\\sqrt2}``); ``\\frac12`` and ``\\sqrt13`` themselves are `screening.canonical`'s."""
    return _INDEXED_ROOT.sub(r"\\sqrt\1{\2}", _SCRIPT_COMMAND.sub(r"\1{\2}", text))
