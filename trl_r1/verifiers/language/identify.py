"""Language identification with py3langid's naive Bayes model, offline, fast enough for every clause.

py3langid ships its weights (no download). We load a private `LanguageIdentifier` (its module-level API
mutates a global language set) and use its model per script: byte n-gram features from its DFA
(`visit_counts`), class log-likelihoods, and its length calibration (softmax of the scores divided by
sqrt(byte length)). Calling `rank` per clause walks every byte in Python and costs ~0.2 ms of overhead per
call, 3-4x over the throughput budget (100 completions of ~2k tokens per second), so scores are built from
words instead: each distinct word's log-likelihood vector (features of `" word "`, log1p-weighted as in
py3langid) is computed once per process and cached, and a text's score is the sum over its words. This
drops the few n-grams that span two words; on the benchmark set it changes no decision that matters
(see benchmarks/language.py).
"""

from __future__ import annotations

import functools
import threading

import numpy as np
from py3langid.langid import MODEL_FILE, LanguageIdentifier, visit_counts

MAX_CACHED_WORDS = 100_000  # per language set (~36 MB for the 89 Latin-script languages); cleared when full


@functools.lru_cache(maxsize=1)
def identifier() -> LanguageIdentifier:
    """The process's private py3langid model with calibrated probabilities (~1 s to load, ~130 MB)."""
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@functools.lru_cache(maxsize=1)
def _feature_automaton() -> tuple:
    """py3langid's byte DFA (next state table, row offsets, feature per state), as `visit_counts` takes it."""
    model = identifier()
    return model.tk_nextmove, [row << 8 for row in model.tk_row], model.tk_output


class ChunkClassifier:
    """py3langid restricted to `languages`, scoring texts given as word lists.

    >>> clf = ChunkClassifier(["en", "fr", "de"])
    >>> probs = clf.probabilities([["the", "sum", "of", "all", "numbers"], ["la", "somme", "de", "tous", "les", "nombres"]])
    >>> [clf.labels[i] for i in probs.argmax(axis=1)]
    ['en', 'fr']
    """

    def __init__(self, languages):
        model = identifier()
        wanted = set(languages)
        columns = [i for i, label in enumerate(model.nb_classes) if label in wanted]
        self.labels = [model.nb_classes[i] for i in columns]  # a label may repeat (Serbian in two scripts)
        self._log_likelihood = np.ascontiguousarray(model.nb_ptc[:, columns], dtype=np.float32)
        self._prior = np.asarray(model.nb_pc[columns], dtype=np.float32)
        self._automaton = _feature_automaton()
        self._lock = threading.Lock()  # the word cache grows in place; async rewards may share the classifier
        self._reset_vocabulary()

    def _reset_vocabulary(self) -> None:
        self._ids: dict[str, int] = {}
        self._vectors = np.zeros((1024, len(self.labels)), np.float32)  # summed feature log-likelihoods per word
        self._sizes = np.zeros(1024, np.float32)  # byte length per word, with one separating space

    def _learn(self, words: set[str]) -> None:
        """Compute and cache the vectors of new words."""
        if len(self._ids) + len(words) > MAX_CACHED_WORDS:
            self._reset_vocabulary()
        needed = len(self._ids) + len(words)
        if needed > len(self._sizes):
            capacity = max(needed, 2 * len(self._sizes))
            self._vectors = np.resize(self._vectors, (capacity, len(self.labels)))
            self._sizes = np.resize(self._sizes, capacity)
        for word in words:
            index = self._ids[word] = len(self._ids)
            data = f" {word} ".encode("utf8", errors="surrogatepass")
            visits = visit_counts(*self._automaton, data)
            self._vectors[index] = 0.0
            if visits:
                weights = np.log1p(np.fromiter(visits.values(), np.float32, len(visits)))
                self._vectors[index] = weights @ self._log_likelihood[np.fromiter(visits.keys(), np.intp, len(visits))]
            self._sizes[index] = len(data) - 1

    def probabilities(self, texts: list[list[str]]) -> np.ndarray:
        """One row of probabilities over `labels` per text (a list of words); uniform without features."""
        with self._lock:
            return self._probabilities(texts)

    def _probabilities(self, texts: list[list[str]]) -> np.ndarray:
        probabilities = np.full((len(texts), len(self.labels)), 1.0 / max(len(self.labels), 1), np.float32)
        rows = [row for row, words in enumerate(texts) if words]
        if not rows:
            return probabilities
        self._learn({word for words in texts for word in words if word not in self._ids})
        ids = self._ids
        flat = np.fromiter((ids[word] for words in texts for word in words), np.intp)
        starts = np.cumsum([0] + [len(texts[row]) for row in rows[:-1]])
        scores = np.add.reduceat(self._vectors[flat], starts, axis=0)
        has_features = scores.any(axis=1)
        scores += self._prior
        scores /= np.sqrt(np.add.reduceat(self._sizes[flat], starts))[:, None]
        scores = np.exp(scores - scores.max(axis=1, keepdims=True))
        scores /= scores.sum(axis=1, keepdims=True)
        rows = np.asarray(rows)
        probabilities[rows[has_features]] = scores[has_features]
        return probabilities


@functools.lru_cache(maxsize=None)
def chunk_classifier(languages: frozenset[str]) -> ChunkClassifier:
    """One shared classifier per language set (built once per process)."""
    return ChunkClassifier(sorted(languages))
