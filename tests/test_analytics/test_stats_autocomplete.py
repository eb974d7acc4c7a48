"""Autocomplete statistics (docs/method.md, "Autocomplete audits") against hand-computed
values and a second method."""

from __future__ import annotations

import math
from collections import Counter
from datetime import date, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from analytics.stats.autocomplete import (
    SOCIAL_PLATFORMS,
    Node,
    Survival,
    churn,
    mean_churn,
    network_texts,
    nmi,
    nmi_pooled,
    platforms_mentioned,
    social_mentions,
    suggestion_sets,
    survival,
    text_key,
    word_distribution,
    words,
)
from analytics.stats.autocomplete_network import (
    DEFAULT_TRIMMING_RULE,
    TRIMMING_RULES,
    association_edges,
    is_trimmed,
    reduce_suggestion,
    root_reduction,
    trim_crawl,
)
from analytics.stats.autocomplete_shocks import Shock, ShockRule, detect_shocks, evaluate_round
from schemas.events import CrawlStarted

ASA = "asa hutchinson"
# A small crawl of one root. "wife" is suggested twice (a merge point), "bio" twice, and
# there are self-loops to the root and to "asa hutchinson biography".
ASA_CRAWL = (
    Node(ASA, 0, ((1, "asa hutchinson biography"), (2, "asa hutchinson wife"), (3, ASA))),
    Node(
        "asa hutchinson biography",
        1,
        ((1, "asa hutchinson bio"), (2, "asa hutchinson wife"), (3, "asa hutchinson biography")),
        parent=ASA,
    ),
    Node("asa hutchinson wife", 1, ((1, "asa hutchinson wife age"), (2, "asa hutchinson bio")), parent=ASA),
)


# --- Node and words -----------------------------------------------------------------------


def test_node_rejects_negative_depth_and_zero_rank() -> None:
    with pytest.raises(ValueError, match="depth"):
        Node("q", -1)
    with pytest.raises(ValueError, match="1-based"):
        Node("q", 0, ((0, "q x"),))


@pytest.mark.parametrize(
    ("text", "exclude", "expected"),
    [
        ("Asa Hutchinson's Biography", frozenset(), ["asa", "hutchinson", "s", "biography"]),
        ("  charlie   baker-email ", frozenset(), ["charlie", "baker", "email"]),
        ("2018 primary", frozenset(), ["2018", "primary"]),
        ("Straße", frozenset(), ["strasse"]),  # casefold, not just lower()
        ("cafe\u0301 menu", frozenset(), ["caf\u00e9", "menu"]),  # decomposed é is one word, composed
        ("\uff26\uff35\uff2c\uff2c width", frozenset(), ["full", "width"]),  # NFKC folds full-width letters
        ("scott walker recount", frozenset({"scott", "walker"}), ["recount"]),
        ("", frozenset(), []),
    ],
)
def test_words(text: str, exclude: frozenset[str], expected: list[str]) -> None:
    assert words(text, exclude) == expected


# --- suggestion sets and churn --------------------------------------------------------------


def test_suggestion_sets_place_each_suggestion_at_its_first_occurrence() -> None:
    """The root's suggestions are depth 0. "wife" is at (2,0) and again at (2,1): it stays at (2,0).
    "bio" is at (1,1) and (2,1): it stays at its best rank, (1,1). Self-loops and the root are
    links back to nodes already placed."""
    assert suggestion_sets(ASA_CRAWL) == {
        (1, 0): {"asa hutchinson biography"},
        (2, 0): {"asa hutchinson wife"},
        (1, 1): {"asa hutchinson bio", "asa hutchinson wife age"},
    }
    assert suggestion_sets(reversed(ASA_CRAWL)) == suggestion_sets(ASA_CRAWL)  # order-independent


def test_suggestion_sets_with_every_occurrence() -> None:
    assert suggestion_sets(ASA_CRAWL, first_occurrence=False) == {
        (1, 0): {"asa hutchinson biography"},
        (2, 0): {"asa hutchinson wife"},
        (3, 0): {ASA},
        (1, 1): {"asa hutchinson bio", "asa hutchinson wife age"},
        (2, 1): {"asa hutchinson wife", "asa hutchinson bio"},
        (3, 1): {"asa hutchinson biography"},
    }


def test_case_and_spacing_variants_are_one_node() -> None:
    """The crawler's identity (query_key): engines fold case and whitespace, so do the stats."""
    assert text_key("  Asa   Hutchinson BIO ") == "asa hutchinson bio"
    crawl = (
        Node("Asa Hutchinson", 0, ((1, "asa  hutchinson"), (2, "Asa Hutchinson Bio"))),  # a self-loop
        Node("asa hutchinson bio", 1, ((1, "ASA HUTCHINSON BIO"), (2, "asa hutchinson bio 2018")), ASA),
    )
    assert suggestion_sets(crawl) == {(2, 0): {"asa hutchinson bio"}, (2, 1): {"asa hutchinson bio 2018"}}
    assert survival([("Asa Bio", date(2018, 6, 1)), ("asa bio", date(2018, 6, 2))]) == {
        "asa bio": Survival(date(2018, 6, 1), date(2018, 6, 2), 2)
    }
    assert trim_crawl(ASA, crawl) == crawl  # "Asa Hutchinson Bio" reaches the node "asa hutchinson bio"
    assert association_edges([(ASA, crawl)]) == Counter({(ASA, "bio"): 1, ("bio", "2018"): 1})


def test_churn_table() -> None:
    previous = {(1, 0): {"x"}, (2, 0): {"y", "z"}, (1, 1): {"p"}, (4, 0): set()}
    current = {(1, 0): {"x"}, (2, 0): {"z", "w"}, (3, 0): {"q"}, (4, 0): set()}
    assert churn(previous, current) == {
        (1, 0): 0.0,  # same single suggestion
        (2, 0): pytest.approx(2 / 3),  # {z} shared of {y, z, w}: 1 - 1/3
        (3, 0): 1.0,  # appeared
        (1, 1): 1.0,  # disappeared
    }  # (4, 0) is empty in both: left out, not 0


def test_churn_of_two_crawls_through_suggestion_sets() -> None:
    """Next crawl: "wife" is replaced at rank 2 by "net worth", and "bio" is gone at depth 1.
    (1,0): 0; (2,0): {wife} vs {net worth} -> 1; (1,1): {bio, wife age} vs {wife age} -> 1 - 1/2."""
    later = (
        Node(ASA, 0, ((1, "asa hutchinson biography"), (2, "asa hutchinson net worth"))),
        Node("asa hutchinson biography", 1, ((1, "asa hutchinson wife age"),)),
    )
    assert churn(suggestion_sets(ASA_CRAWL), suggestion_sets(later)) == {
        (1, 0): 0.0,
        (2, 0): 1.0,
        (1, 1): 0.5,
    }


def test_mean_churn_averages_over_the_pairs_that_measured_a_cell() -> None:
    pairs = [{(1, 0): 0.0, (2, 0): 1.0}, {(1, 0): 0.5}, {(1, 0): 1.0, (2, 0): 0.5}]
    # (1,0): (0 + 0.5 + 1) / 3; (2,0): (1 + 0.5) / 2
    assert mean_churn(pairs) == {(1, 0): 0.5, (2, 0): 0.75}
    assert mean_churn([]) == {}


def test_mean_churn_is_equation_2_when_every_cell_is_measured() -> None:
    """Two roots x two crawl pairs: (1/|Q|)(1/|T|) sum_q sum_t c(t, q)."""
    c = {("q1", 0): 0.1, ("q1", 1): 0.3, ("q2", 0): 0.6, ("q2", 1): 1.0}
    equation_2 = sum(c.values()) / 2 / 2
    assert mean_churn([{(1, 0): v} for v in c.values()])[(1, 0)] == pytest.approx(equation_2)


cells = st.dictionaries(
    st.tuples(st.integers(1, 3), st.integers(0, 2)), st.frozensets(st.sampled_from("abcde")), max_size=6
)


@given(cells)
def test_identical_crawls_have_no_churn(sets: dict[tuple[int, int], frozenset[str]]) -> None:
    assert all(v == 0.0 for v in churn(sets, sets).values())


@given(cells, cells)
def test_churn_is_a_share_and_symmetric(
    a: dict[tuple[int, int], frozenset[str]], b: dict[tuple[int, int], frozenset[str]]
) -> None:
    result = churn(a, b)
    assert result == churn(b, a)
    assert all(0.0 <= v <= 1.0 for v in result.values())


# --- survival ---------------------------------------------------------------------------------


def test_survival_counts_distinct_days() -> None:
    """Two crawls on 1 June count once; "a" spans three days but was seen on two."""
    appearances = [
        ("a", date(2018, 6, 1)),
        ("a", date(2018, 6, 1)),
        ("b", date(2018, 6, 2)),
        ("a", date(2018, 6, 3)),
    ]
    assert survival(appearances) == {
        "a": Survival(date(2018, 6, 1), date(2018, 6, 3), 2),
        "b": Survival(date(2018, 6, 2), date(2018, 6, 2), 1),
    }
    assert survival([]) == {}


def test_survival_refuses_timestamps() -> None:
    with pytest.raises(TypeError, match="date"):
        survival([("a", datetime(2018, 6, 1, 9))])


# --- word distributions and nmi -----------------------------------------------------------------


def test_word_distribution_leaves_out_the_root_words_and_counts_each_node_once() -> None:
    texts = [
        "asa hutchinson biography",
        "asa hutchinson biography",  # the same node linked twice
        "Asa Hutchinson wife age",
        "hutchinson family asa",  # root words are left out wherever they are
        "asa hutchinson",
    ]
    assert word_distribution(texts, "Asa Hutchinson") == Counter(biography=1, wife=1, age=1, family=1)


def test_network_texts_are_the_distinct_suggestions() -> None:
    assert network_texts(ASA_CRAWL) == {
        ASA,
        "asa hutchinson biography",
        "asa hutchinson wife",
        "asa hutchinson bio",
        "asa hutchinson wife age",
    }
    assert word_distribution(network_texts(ASA_CRAWL), ASA) == Counter(biography=1, wife=2, bio=1, age=1)


def test_nmi_pooled_hand_computed_one_new_word() -> None:
    """P = {a: 1}, Q = {a: 1, b: 1}; T is fair, so the pooled M = (P + Q)/2 = (3/4, 1/4).

    I(W;T) = H(W) - H(W|T) = H(3/4, 1/4) - (H(P) + H(Q))/2
           = (3/4 log2(4/3) + 1/4 log2 4) - (0 + 1)/2
           = (3/2 - 3/4 log2 3 + 1/2) - 1/2 = 3/2 - 3/4 log2 3  bits  (about 0.311278),
    H(T) = 1 bit, so nmi = 1 - I = 3/4 log2 3 - 1/2, about 0.688722.
    """
    expected = 0.75 * math.log2(3) - 0.5
    assert nmi_pooled(Counter(a=1), Counter(a=1, b=1)) == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx(0.688722, abs=1e-6)


@pytest.mark.parametrize(
    ("previous", "current", "expected"),
    [
        # One of two words replaced: P = (1/2, 1/2, 0), Q = (0, 1/2, 1/2), M = (1/4, 1/2, 1/4).
        # KL(P||M) = 1/2 log2 2 + 1/2 log2 1 = 1/2 = KL(Q||M), so I = JSD = 1/2 and nmi = 1/2.
        (Counter(a=1, b=1), Counter(b=1, c=1), 0.5),
        # Disjoint: M = (1/2, 1/2), KL(P||M) = KL(Q||M) = 1 bit, I = 1 = H(T), nmi = 0.
        (Counter(a=3), Counter(b=5), 0.0),
        (Counter(a=2, b=1), Counter(a=2, b=1), 1.0),  # nothing changed
        (Counter(a=1, b=2), Counter(a=2, b=4), 1.0),  # same distribution, twice the words
        (Counter(), Counter(), 1.0),  # convention: both empty, nothing changed
        (Counter(), Counter(a=1), 0.0),  # convention: one empty, everything changed
        (Counter(a=0), Counter(), 1.0),  # zero counts are no words
    ],
)
def test_nmi_pooled_table(previous: Counter[str], current: Counter[str], expected: float) -> None:
    assert nmi_pooled(previous, current) == pytest.approx(expected, abs=1e-12)
    assert nmi_pooled(current, previous) == pytest.approx(expected, abs=1e-12)


def test_nmi_pooled_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        nmi_pooled(Counter(a=-1), Counter(a=1))


def _pooled_from_the_joint_table(previous: dict[str, int], current: dict[str, int]) -> float:
    """Second method: build P(W, T) with P(T = t) = 1/2 and use I = H(W) + H(T) - H(W, T)."""
    vocab = sorted(set(previous) | set(current))
    p = np.array([previous.get(w, 0) for w in vocab], dtype=float)
    q = np.array([current.get(w, 0) for w in vocab], dtype=float)
    joint = np.stack([p / p.sum(), q / q.sum()]) / 2  # rows: T, columns: W

    def entropy(x: np.ndarray) -> float:
        x = x[x > 0]
        return float(-(x * np.log2(x)).sum())

    info = entropy(joint.sum(axis=0)) + entropy(joint.sum(axis=1)) - entropy(joint.ravel())
    return 1.0 - info / entropy(joint.sum(axis=1))


distributions = st.dictionaries(st.sampled_from("abcdefg"), st.integers(0, 30), max_size=7).filter(
    lambda d: sum(d.values()) > 0
)


@given(distributions, distributions)
def test_nmi_pooled_matches_the_joint_table_and_jensen_shannon(
    previous: dict[str, int], current: dict[str, int]
) -> None:
    """Both identities of DESIGN §3.3, to 1e-9 (float rounding of a dozen logs)."""
    value = nmi_pooled(previous, current)
    assert value == pytest.approx(_pooled_from_the_joint_table(previous, current), abs=1e-9)
    vocab = sorted(set(previous) | set(current))
    js_distance = jensenshannon(
        [previous.get(w, 0) for w in vocab], [current.get(w, 0) for w in vocab], base=2
    )
    assert value == pytest.approx(1.0 - float(js_distance) ** 2, abs=1e-9)  # scipy returns sqrt(JSD)


@given(distributions, distributions)
def test_nmi_pooled_is_a_symmetric_share(previous: dict[str, int], current: dict[str, int]) -> None:
    assert 0.0 <= nmi_pooled(previous, current) <= 1.0
    assert nmi_pooled(previous, current) == nmi_pooled(current, previous)


@given(distributions)
def test_nmi_pooled_is_one_when_nothing_changed(counts: dict[str, int]) -> None:
    assert nmi_pooled(counts, counts) == 1.0


def _equation3_from_the_joint_table(previous: dict[str, int], current: dict[str, int]) -> float:
    """Second method: the maximal coupling as an explicit matrix, I from the joint's entropies."""
    vocab = sorted(set(previous) | set(current))
    p = np.array([previous.get(w, 0) for w in vocab], dtype=float)
    q = np.array([current.get(w, 0) for w in vocab], dtype=float)
    p, q = p / p.sum(), q / q.sum()
    kept = np.minimum(p, q)
    joint = np.diag(kept)
    if kept.sum() < 1:
        joint += np.outer(p - kept, q - kept) / (1 - kept.sum())

    def entropy(x: np.ndarray) -> float:
        x = x[x > 1e-300]
        return float(-(x * np.log(x)).sum())

    hp, hq = entropy(joint.sum(axis=1)), entropy(joint.sum(axis=0))
    if hp + hq == 0:
        return 1.0 if np.array_equal(p > 0, q > 0) else 0.0
    return 2 * (hp + hq - entropy(joint.ravel())) / (hp + hq)


def test_nmi_is_equation_3_with_arithmetic_normalisation() -> None:
    """RAI Eq. 3, 2 I / (H_t + H_t+1): of 100 equally frequent words 10 are replaced. The
    kept mass 0.9 sits on the diagonal (min(P, Q) = 0.01 each), the replaced 0.1 is paired
    independently: I = 0.9 ln 100 - 0.1 ln 0.1, H_t = H_t+1 = ln 100. (The pooled reading
    gives 1 - JSD / ln 2 = 0.9 here.)"""
    before = Counter({f"w{i}": 1 for i in range(100)})
    after = Counter({f"w{i}": 1 for i in range(10, 110)})
    expected = 2 * (0.9 * math.log(100) - 0.1 * math.log(0.1)) / (2 * math.log(100))
    assert nmi(before, after) == pytest.approx(expected, abs=1e-12)
    assert nmi_pooled(before, after) == pytest.approx(0.9, abs=1e-12)


@pytest.mark.parametrize(
    ("previous", "current", "expected"),
    [
        (Counter(a=2, b=1), Counter(a=2, b=1), 1.0),  # nothing changed: I = H
        (Counter(a=1, b=2), Counter(a=2, b=4), 1.0),  # same distribution, twice the words
        (Counter(a=3, b=1), Counter(c=5, d=2), 0.0),  # disjoint: the independent product
        (Counter(a=1), Counter(a=1, b=1), 0.0),  # one crawl without entropy: no information
        (Counter(a=4), Counter(a=1), 1.0),  # one and the same word
        (Counter(a=4), Counter(b=1), 0.0),
        (Counter(), Counter(), 1.0),
        (Counter(), Counter(a=1), 0.0),
    ],
)
def test_nmi_equation_3_table(previous: Counter[str], current: Counter[str], expected: float) -> None:
    assert nmi(previous, current) == pytest.approx(expected, abs=1e-12)
    assert nmi(current, previous) == pytest.approx(expected, abs=1e-12)


def test_nmi_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        nmi(Counter(a=-1), Counter(a=1))


@given(distributions, distributions)
def test_nmi_matches_the_explicit_coupling(previous: dict[str, int], current: dict[str, int]) -> None:
    value = nmi(previous, current)
    assert value == pytest.approx(_equation3_from_the_joint_table(previous, current), abs=1e-9)
    assert 0.0 <= value <= 1.0 and value == pytest.approx(nmi(current, previous), abs=1e-12)
    assert nmi(previous, previous) == pytest.approx(1.0, abs=1e-12)


# --- social media -------------------------------------------------------------------------------


def test_social_mentions() -> None:
    texts = [
        "charlie baker twitter",
        "Charlie Baker Twitter account twitter",  # one text, counted once
        "charlie baker youtuber",  # not a whole word
        "charlie baker x",  # "x" is not twitter
        "charlie baker facebook instagram",
        "charlie baker LinkedIn",
        "reddit.com/r/massachusetts charlie baker",
    ]
    assert social_mentions(texts) == Counter(twitter=2, facebook=1, instagram=1, linkedin=1, reddit=1)
    assert set(social_mentions([])) == set(SOCIAL_PLATFORMS)  # every platform is a key, zeros included
    assert platforms_mentioned("YouTube twitter.com") == {"youtube", "twitter"}


# --- trimming -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("root", "target", "rule", "trimmed"),
    [
        ("scott walker", "scott walker wisconsin recount", "first_last_word", False),
        ("scott walker", "recount", "first_last_word", True),  # the paper's emergent root
        ("scott walker", "wisconsin economy failing under Scott Walker", "first_last_word", False),
        ("scott walker", "Scott Walker's recount", "first_last_word", False),
        ("scott walker", "scott walkerton", "first_last_word", True),  # whole words only
        ("matt mead", "matt meadows", "first_last_word", True),  # disambiguation drift
        ("asa hutchinson", "hutchinson asa", "first_last_word", False),  # order does not matter
        ("governor kate brown", "kate brown oregon", "first_last_word", True),  # first word missing
        ("governor kate brown", "kate brown oregon", "any_word", False),
        ("jerry brown", "jerry brown", "all_words", False),
        ("mary fallin", "mary j blige", "all_words", True),
        ("mary fallin", "mary j blige", "any_word", False),
        ("mary fallin", "mary j blige", "none", False),
        ("recount", "recounting", "first_last_word", True),  # one-word root: first = last
        ("recount", "recount definition", "first_last_word", False),
        ("", "anything", "first_last_word", False),  # a root without words trims nothing
    ],
)
def test_is_trimmed(root: str, target: str, rule: str, trimmed: bool) -> None:
    assert is_trimmed(root, target, rule) is trimmed


def test_unknown_trimming_rule_lists_the_choices() -> None:
    with pytest.raises(ValueError, match=r"'first_last_word'.*'none'"):
        is_trimmed("a b", "a b c", "first_and_last")
    with pytest.raises(ValueError, match="unknown trimming rule"):
        trim_crawl("a b", (), "first_and_last")


def test_the_default_rule_is_the_one_crawls_record() -> None:
    assert DEFAULT_TRIMMING_RULE in TRIMMING_RULES
    assert CrawlStarted.model_fields["trimming_rule"].default == DEFAULT_TRIMMING_RULE


WALKER = "scott walker"
WALKER_CRAWL = (
    Node(WALKER, 0, ((1, "scott walker wisconsin recount"), (2, "scott walker twitter"))),
    Node("scott walker wisconsin recount", 1, ((1, "recount"), (2, "scott walker recount 2016")), WALKER),
    Node("scott walker twitter", 1, (), WALKER),
    Node("recount", 2, ((1, "recounting"), (2, "recount scott walker")), "scott walker wisconsin recount"),
    Node(
        "scott walker recount 2016",
        2,
        ((1, "scott walker recount results"),),
        "scott walker wisconsin recount",
    ),
    Node("recounting", 3, ((1, "recounting meaning"),), "recount"),
    Node("recount scott walker", 3, ((1, "scott walker"),), "recount"),
)


def test_trim_crawl_drops_emergent_roots_and_what_hangs_below_them() -> None:
    """The emergent root "recount" is trimmed, and "recounting" below it; "recount scott walker"
    names the root but only "recount" suggested it, so it goes too."""
    assert trim_crawl(WALKER, WALKER_CRAWL) == (
        WALKER_CRAWL[0],
        Node("scott walker wisconsin recount", 1, ((2, "scott walker recount 2016"),), WALKER),
        WALKER_CRAWL[2],
        WALKER_CRAWL[4],
    )
    assert trim_crawl(WALKER, WALKER_CRAWL, "none") == WALKER_CRAWL


# --- association networks ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "suggestion", "parent_reduction", "expected"),
    [
        (ASA, "asa hutchinson biography", ASA, "biography"),  # the paper's depth-0 example
        ("asa hutchinson biography", "asa hutchinson bio", "biography", "bio"),  # the paper's memory example
        ("asa hutchinson biography", "asa hutchinson biography wife", "biography", "wife"),
        ("asa hutchinson biography", "biography asa hutchinson", "biography", "biography"),  # adds nothing
        ("nathan deal new laws", "nathan deal news", "new laws", "news"),  # a shorter suggestion
        ("charlie baker", "Charlie Baker Approval Rating", "charlie baker", "approval rating"),
        ("a b", "a b", "", ""),  # nothing added and nothing to remember
    ],
)
def test_reduce_suggestion(query: str, suggestion: str, parent_reduction: str, expected: str) -> None:
    assert reduce_suggestion(query, suggestion, parent_reduction) == expected


def test_root_reduction_is_the_root_words() -> None:
    assert root_reduction("  Asa  Hutchinson ") == ASA


ASSOCIATION_CRAWL = (
    Node(ASA, 0, ((1, "asa hutchinson biography"), (2, "asa hutchinson wife"), (3, ASA), (4, "biography"))),
    Node(
        "asa hutchinson biography",
        1,
        ((1, "asa hutchinson bio"), (2, "asa hutchinson biography wife"), (3, "asa hutchinson biography")),
        ASA,
    ),
    Node(
        "asa hutchinson wife", 1, ((1, "asa hutchinson wife age"), (2, "asa hutchinson biography wife")), ASA
    ),
    Node("asa hutchinson biography wife", 2, ((1, "asa hutchinson wife"),), "asa hutchinson biography"),
    Node("biography", 1, ((1, "biography definition"),), ASA),  # trimmed by the default rule
)


def test_association_edges_hand_computed() -> None:
    """Names: root "asa hutchinson", "... biography" -> "biography", "... wife" -> "wife",
    "... biography wife" (parent "... biography") -> "wife".
    Edges: root -> biography, root -> wife; biography -> bio, biography -> wife;
    wife -> age, wife -> biography ("biography wife" minus {asa, hutchinson, wife});
    "biography wife" -> "asa hutchinson wife" adds nothing, so it remembers: wife -> wife.
    Self-loops and the trimmed "biography" branch are left out; the second crawl adds
    one more root -> biography."""
    second = (Node(ASA, 0, ((1, "asa hutchinson biography"),)),)
    assert association_edges([(ASA, ASSOCIATION_CRAWL), (ASA, second)]) == Counter(
        {
            (ASA, "biography"): 2,
            (ASA, "wife"): 1,
            ("biography", "bio"): 1,
            ("biography", "wife"): 1,
            ("wife", "age"): 1,
            ("wife", "biography"): 1,
            ("wife", "wife"): 1,
        }
    )


def test_association_edges_options() -> None:
    base = association_edges([(ASA, ASSOCIATION_CRAWL)])
    with_loops = association_edges([(ASA, ASSOCIATION_CRAWL)], self_loops=True)
    # root -> root adds nothing and remembers the root; "biography" -> itself remembers "biography"
    assert with_loops - base == Counter({(ASA, ASA): 1, ("biography", "biography"): 1})
    untrimmed = association_edges([(ASA, ASSOCIATION_CRAWL)], rule="none")
    # the kept emergent root: root -> "biography", and "biography" -> "biography definition" adds "definition"
    assert untrimmed - base == Counter({(ASA, "biography"): 1, ("biography", "definition"): 1})


def test_association_edges_name_a_node_by_its_parent() -> None:
    """Without a parent the lowest (depth, rank, query) suggester is used: both depth-1 nodes
    suggest "biography wife" at rank 2, and "asa hutchinson biography" sorts first, so the
    node is "wife". With parent "asa hutchinson wife" it is "biography", and its link back to
    "asa hutchinson wife" adds nothing: biography -> biography."""
    orphan = (*ASSOCIATION_CRAWL[:3], Node("asa hutchinson biography wife", 2, ((1, "asa hutchinson wife"),)))
    assert association_edges([(ASA, orphan)])[("wife", "wife")] == 1
    via_wife = (
        *ASSOCIATION_CRAWL[:3],
        Node("asa hutchinson biography wife", 2, ((1, "asa hutchinson wife"),), "asa hutchinson wife"),
    )
    edges = association_edges([(ASA, via_wife)])
    assert edges[("biography", "biography")] == 1 and edges[("wife", "wife")] == 0


def test_association_edges_count_a_repeated_event_once() -> None:
    doubled = (*ASSOCIATION_CRAWL, ASSOCIATION_CRAWL[1])
    assert association_edges([(ASA, doubled)]) == association_edges([(ASA, ASSOCIATION_CRAWL)])


# --- shocks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"baseline_window": 0},
        {"min_history": 0},
        {"min_roots": 0},
        {"drop": 0.0},
        {"drop": 1.5},
        {"min_share": 0.0},
        {"min_share": 1.1},
    ],
)
def test_shock_rule_validates(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ShockRule(**kwargs)  # type: ignore[arg-type]


HISTORY = {
    "a": [0.9, 0.8, 0.85],  # median 0.85
    "b": [0.7, 0.9, 0.8, 0.95],  # median (0.8 + 0.9) / 2 = 0.85
    "c": [0.6, math.nan, 0.6, 0.6],  # NaN ignored: median 0.6, three values
    "d": [0.9, 0.9],  # too short to judge
    "e": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.2],  # window of 6: [1, 1, 1, 1, 1, 0.2], median 1.0
    "g": [0.9, 0.9, 0.9],
}
CURRENT = {
    "a": 0.75,  # 0.85 - 0.75 = 0.1 (0.0999... in floats): dropped
    "b": 0.8,  # 0.05 below: not dropped
    "c": 0.3,  # 0.3 below: dropped
    "d": 0.1,  # not judged
    "e": 0.85,  # 0.15 below: dropped
    "f": 0.2,  # no history: not judged
    "g": math.nan,  # not judged
}


def test_evaluate_round_hand_computed() -> None:
    """Judged a, b, c, e; dropped a, c, e: share 3/4 >= 1/2 with 4 >= 3 roots."""
    assert evaluate_round(HISTORY, CURRENT, round_id="r9") == Shock("r9", 0.75, ("a", "c", "e"), 4)
    assert evaluate_round(HISTORY, CURRENT, ShockRule(min_share=0.8), round_id="r9") is None
    assert evaluate_round(HISTORY, CURRENT, ShockRule(min_roots=5), round_id="r9") is None
    # a longer history requirement leaves only b, e (4 and 8 values): e dropped, share 1/2
    assert evaluate_round(HISTORY, CURRENT, ShockRule(min_history=4, min_roots=2), round_id="r9") == Shock(
        "r9", 0.5, ("e",), 2
    )


def test_detect_shocks_over_a_study() -> None:
    """r1-r3 build history (nothing judged before three values). r5: three of four roots fall
    from 0.9 to 0.5, a shock. r6: back to 0.9, baselines are still 0.9 (median). r7: one root of
    four drops, share 1/4. r8: all four old roots drop, the new root "n" is not judged."""
    steady = dict.fromkeys("pqrs", 0.9)
    rounds = {
        "r1": steady,
        "r2": steady,
        "r3": steady,
        "r4": steady,
        "r5": {"p": 0.5, "q": 0.5, "r": 0.5, "s": 0.9},
        "r6": steady,
        "r7": {**steady, "p": 0.4},
        "r8": {**dict.fromkeys("pqrs", 0.6), "n": 0.1},
    }
    shocks = detect_shocks(rounds)
    assert shocks == [Shock("r5", 0.75, ("p", "q", "r"), 4), Shock("r8", 1.0, ("p", "q", "r", "s"), 4)]

    history: dict[str, list[float]] = {}  # the same, incrementally, as a stream processor would
    live = []
    for round_id, current in rounds.items():
        if (shock := evaluate_round(history, current, round_id=round_id)) is not None:
            live.append(shock)
        for root, value in current.items():
            history.setdefault(root, []).append(value)
    assert live == shocks


def test_the_schema_accepts_exactly_the_trimming_rules_the_stream_knows() -> None:
    import typing

    from analytics.stats.autocomplete_network import TRIMMING_RULES
    from schemas.events import CrawlStarted

    assert set(typing.get_args(CrawlStarted.model_fields["trimming_rule"].annotation)) == set(TRIMMING_RULES)
