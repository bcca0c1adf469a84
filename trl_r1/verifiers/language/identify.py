"""Language identification with py3langid's naive Bayes model, offline, fast enough for every clause.

py3langid ships its weights (no download). We load a private `LanguageIdentifier` (its module-level API
mutates a global language set) and use its model per script: byte n-gram features from its DFA
(`visit_counts`), class log-likelihoods, and its length calibration (softmax of the scores divided by
sqrt(byte length)). Calling `rank` per clause walks every byte in Python and costs ~0.2 ms of overhead per
call, 3-4x over the throughput budget (100 completions of ~2k tokens per second), so scores are built from
words instead: each distinct word's log-likelihood vector (features of `" word "`, log1p-weighted as in
py3langid) is computed once per process and cached, and a text's score is the sum over its words. This
drops the few n-grams that span two words; on the benchmark set it changes no decision (same MAE). New words
are walked through the DFA together, one numpy step per byte position.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
from py3langid.langid import MODEL_FILE, LanguageIdentifier, visit_counts

MAX_VECTORIZED_BYTES = 64  # longer words (rare: a run of letters without spaces) take py3langid's own loop
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


@functools.lru_cache(maxsize=1)
def _feature_automaton_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same DFA as numpy arrays (the next-state table is shared with the model, not copied)."""
    model = identifier()
    return (np.frombuffer(model.tk_nextmove, np.uint32), np.asarray(model.tk_row, np.intp) << 8,
            np.asarray(model.tk_output, np.intp))


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
        self._lock = threading.Lock()  # the word cache grows in place; async rewards may share the classifier
        self.clear_word_cache()

    def clear_word_cache(self) -> None:
        """Forget the cached word vectors (done automatically when more than MAX_CACHED_WORDS are needed)."""
        self._ids: dict[str, int] = {}
        self._vectors = np.zeros((1024, len(self.labels)), np.float32)  # summed feature log-likelihoods per word
        self._sizes = np.zeros(1024, np.float32)  # byte length per word, with one separating space

    def _learn(self, words: set[str]) -> None:
        """Compute and cache the vectors of new words. The words are registered last, so that a reward's time limit
        interrupting the computation (`trl_r1.rewards.base.time_limit`) leaves the cache as it was, never words with
        zero vectors."""
        new = list(words)
        encoded = [f" {word} ".encode("utf8", errors="surrogatepass") for word in new]
        vectors = np.zeros((len(new), len(self.labels)), np.float32)
        rows, features = self._visits(encoded)
        if len(rows):  # log1p-weighted feature counts per word, as py3langid weighs a text's counts
            keys, counts = np.unique(rows * len(self._log_likelihood) + features, return_counts=True)
            rows, features = np.divmod(keys, len(self._log_likelihood))
            starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            weighted = self._log_likelihood[features] * np.log1p(counts.astype(np.float32))[:, None]
            vectors[rows[starts]] = np.add.reduceat(weighted, starts, axis=0)
        first = len(self._ids)
        needed = first + len(new)
        if needed > len(self._sizes):
            capacity = max(needed, 2 * len(self._sizes))
            self._vectors = np.resize(self._vectors, (capacity, len(self.labels)))
            self._sizes = np.resize(self._sizes, capacity)
        self._sizes[first:needed] = [len(data) - 1 for data in encoded]
        self._vectors[first:needed] = vectors
        self._ids.update(zip(new, range(first, needed)))

    def _visits(self, encoded: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """(word index, feature) for every feature py3langid's byte DFA emits, walking all words at once
        (one numpy step per byte position, ~3x faster than `visit_counts`' Python step per byte). Words longer
        than `MAX_VECTORIZED_BYTES` (rare) take `visit_counts`."""
        rows, features = [], []
        short = [i for i, data in enumerate(encoded) if len(data) <= MAX_VECTORIZED_BYTES]
        for i in sorted(set(range(len(encoded))) - set(short)):
            for feature, count in (visit_counts(*_feature_automaton(), encoded[i]) or {}).items():
                rows.append(np.full(count, i))
                features.append(np.full(count, feature))
        if short:
            next_state, row_base, feature_of = _feature_automaton_arrays()
            width = max(len(encoded[i]) for i in short)
            grid = np.frombuffer(b"".join(encoded[i].ljust(width) for i in short), np.uint8).reshape(len(short), width)
            lengths = np.asarray([len(encoded[i]) for i in short])
            indices = np.asarray(short)
            state = np.zeros(len(short), np.intp)
            for position in range(width):
                state = next_state[row_base[state] + grid[:, position]]
                emitted = feature_of[state]
                hit = (emitted >= 0) & (position < lengths)
                rows.append(indices[hit])
                features.append(emitted[hit])
        if not rows:
            return np.zeros(0, np.intp), np.zeros(0, np.intp)
        return np.concatenate(rows).astype(np.intp), np.concatenate(features).astype(np.intp)

    def probabilities(self, texts: list[list[str]]) -> np.ndarray:
        """One row of probabilities over `labels` per text (a list of words); uniform without features."""
        with self._lock:
            return self._probabilities(texts)

    def _probabilities(self, texts: list[list[str]]) -> np.ndarray:
        probabilities = np.full((len(texts), len(self.labels)), 1.0 / max(len(self.labels), 1), np.float32)
        rows = [row for row, words in enumerate(texts) if words]
        if not rows:
            return probabilities
        batch = {word for words in texts for word in words}
        if len(self._ids) + len(batch) > MAX_CACHED_WORDS:
            self.clear_word_cache()
        self._learn(batch - self._ids.keys())
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


_CLASSIFIERS: dict[frozenset[str], ChunkClassifier] = {}


def chunk_classifier(languages: frozenset[str]) -> ChunkClassifier:
    """One shared classifier per language set (built once per process)."""
    classifier = _CLASSIFIERS.get(languages)
    if classifier is None:
        classifier = _CLASSIFIERS[languages] = ChunkClassifier(sorted(languages))
    return classifier


def clear_word_caches() -> None:
    """Forget every cached word vector (benchmarks use it to time the worst case: all words new)."""
    for classifier in _CLASSIFIERS.values():
        classifier.clear_word_cache()
