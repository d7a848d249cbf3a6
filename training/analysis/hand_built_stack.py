"""Hand-built weights for the stack recognizers: a pushdown automaton by hand.

`set_hand_built_weights(model, language)` writes into a recognizer that
`zoo.recognizer` built (a DiffStk-RNN or a StackRNN, the cells unchanged)
weights that make it an exact recogniser of palindromes w c w^R or of D2,
as far as the cell allows: no training. Scored with the zoo's own metrics
on the zoo's own splits (`docs/experiments/hand_built_stack.py`,
docs/stack-training.md), they separate "the cell cannot represent it"
from "the metric scores it wrongly" and from "training does not find it".

The automaton is a small threshold circuit. Each unit is a binary feature,
`[sum of weighted terms + constant > 0]`, of the step's input symbol, the
previous step's features and the entries of the stack's top element read
before the step's update (`S_{t-1}[0]`, eq. 5; the recipes read one
element, `read_depth = 1`). A gain `GAIN` saturates the cell's activation,
so a unit is at its low or high value (0/1 for the StackRNN's sigmoid,
-1.7159/+1.7159 for the DiffStk's `f1`). The stack's actions, the pushed
element and the two heads (next symbol, accept) are linear in the step's
features, as the cells compute them.

Palindromes (8 units): push each symbol of w, pop at c and at every symbol
after it (one step early: the read lags the step by one, so the symbol to
predict after c is the top read at the step), keep the predicted symbol
in two features and compare the next input with it (a mismatch, a second
c or a symbol after the mirror has ended sets a sticky FAIL). Accept when
c was read, nothing failed and the read is empty. D2 (7 units): push each
open bracket with a flag "the stack below me was empty", pop at a close
bracket, check it against the top read; accept when the popped element had
the flag (with one element read, the element below the top is not seen).
The next symbol is the mirrored one on palindromes, an open bracket (legal
after every prefix) on D2.

In the DiffStk cell the read enters as `z_{t-1} + P S_{t-1}[0]` before the
recurrent matrix; each read entry goes, scaled by `READ_SCALE`, to a "slot"
unit whose own value only the heads and the push read, and the recurrent
matrix thresholds the sum (the slot's own value, at most 1.7159, shifts
the entry by less than a tenth).
"""

import numpy as np

import zoo
from training.data import languages
from training.data.dyck_strings import END_ID, START_ID
from zoo.cells.diffstk import DiffStkRNNCell
from zoo.cells.stack_rnn import StackRNNCell
from zoo.layers.differentiable_stack import NO_OP, POP, PUSH

GAIN = 20.0
READ_SCALE = 20.0
# Every action but the chosen ones gets this many gains below: never taken.
NEVER = -5.0


def _token(language, name):
    return languages.token_names(language).index(name)


def palindrome_circuit():
    """The palindrome automaton: units, their terms, actions, push and heads.

    Terms are `{("x", id) | ("prev", unit) | ("read", entry) | "one": weight}`
    over binary features (a read entry is the raw top: -1 empty, 0 or 1).
    """
    a, b, c = (_token("palindrome", s) for s in "abc")
    x = {s: ("x", i) for s, i in (("a", a), ("b", b), ("c", c), ("START", START_ID))}
    start = {x["START"]: -10.0}  # the zero state before START reads as 1/2
    units = {
        "XA": {x["a"]: 1.0, "one": -0.5},  # the input is a (pushed entry 0)
        "XB": {x["b"]: 1.0, "one": -0.5},  # the input is b (pushed entry 1)
        "SEEN": {("prev", "SEEN"): 2.0, x["c"]: 2.0, "one": -1.0, **start},
        "EA": {("read", 0): 1.0, "one": -0.5},  # the top read is a
        "EB": {("read", 1): 1.0, "one": -0.5},  # the top read is b
        # after c, the input is not the symbol predicted at the last step
        "M1": {
            ("prev", "SEEN"): 1.0,
            x["a"]: 1.0,
            ("prev", "EA"): -1.0,
            "one": -1.5,
            **start,
        },
        "M2": {
            ("prev", "SEEN"): 1.0,
            x["b"]: 1.0,
            ("prev", "EB"): -1.0,
            "one": -1.5,
            **start,
        },
        "FAIL": {
            ("prev", "FAIL"): 2.0,
            ("prev", "M1"): 2.0,
            ("prev", "M2"): 2.0,
            ("prev", "SEEN"): 1.0,  # with x = c: a second marker
            x["c"]: 1.0,
            "one": -1.5,
            **start,
        },
    }
    vocab = languages.vocabulary_size("palindrome")
    next_symbol = {token: {"one": NEVER} for token in range(vocab)}
    next_symbol[c] = {"SEEN": -3.0, "one": 3.0}  # before c: c (a, b or c are legal)
    next_symbol[a] = {"EA": 2.0}  # after c: the top read, or END on an empty one
    next_symbol[b] = {"EB": 2.0}
    next_symbol[END_ID] = {"SEEN": 1.0}
    return {
        "units": units,
        "slots": {0: "XA", 1: "XB"},
        "actions": {
            PUSH: {"XA": 1.0, "XB": 1.0, "SEEN": -2.0, "one": -0.5},
            POP: {},
            NO_OP: {"one": NEVER},
        },
        "push": {0: {"XA": 1.0, "one": -0.5}, 1: {"XB": 1.0, "one": -0.5}},
        "next_symbol": next_symbol,
        "accept": {
            "SEEN": 1.0,
            "FAIL": -1.0,
            "M1": -1.0,
            "M2": -1.0,
            "EA": -1.0,
            "EB": -1.0,
            "one": -0.5,
        },
    }


def d2_circuit():
    """The D2 automaton, in the terms of `palindrome_circuit`."""
    names = languages.token_names("D2")
    open_a, open_b = names.index("(a"), names.index("(b")
    close_a, close_b = names.index("a)"), names.index("b)")
    start = ("x", START_ID)
    units = {
        "OA": {("x", open_a): 1.0, "one": -0.5},  # pushed entry 0
        "OB": {("x", open_b): 1.0, "one": -0.5},  # pushed entry 1
        "EMP": {("read", 0): -1.0, "one": -0.5},  # the top read is empty
        # the prefix is complete: START, or a close bracket popping the bottom
        "BOT": {
            start: 3.0,
            ("x", close_a): 1.0,
            ("x", close_b): 1.0,
            ("read", 2): 1.0,
            "one": -1.5,
        },
        "M1": {("x", close_a): 2.0, ("read", 0): -1.0, "one": -1.5},  # a) on no (a
        "M2": {("x", close_b): 2.0, ("read", 1): -1.0, "one": -1.5},  # b) on no (b
        "FAIL": {
            ("prev", "FAIL"): 2.0,
            ("prev", "M1"): 2.0,
            ("prev", "M2"): 2.0,
            "one": -1.0,
            start: -10.0,
        },
    }
    vocab = languages.vocabulary_size("D2")
    next_symbol = {token: {"one": NEVER} for token in range(vocab)}
    next_symbol[open_a] = {"one": 1.0}  # an open bracket is always legal
    return {
        "units": units,
        "slots": {0: "OA", 1: "OB", 2: "EMP"},
        "actions": {
            PUSH: {"OA": 1.0, "OB": 1.0, "one": -0.5},
            POP: {},
            NO_OP: {"one": NEVER},
        },
        # entry 2: "the stack was empty below this element" (the bottom)
        "push": {
            0: {"OA": 1.0, "one": -0.5},
            1: {"OB": 1.0, "one": -0.5},
            2: {"EMP": 1.0, "one": -0.5},
        },
        "next_symbol": next_symbol,
        "accept": {"BOT": 1.0, "FAIL": -1.0, "M1": -1.0, "M2": -1.0, "one": -0.5},
    }


CIRCUITS = {"palindrome": palindrome_circuit, "D2": d2_circuit}


def _cell(parts):
    cell = parts.recurrent[0].cell
    if not isinstance(cell, (StackRNNCell, DiffStkRNNCell)):
        raise ValueError(
            "hand-built weights exist for the StackRNN and the DiffStk-RNN; "
            f"received a recognizer of {type(cell).__name__}."
        )
    return cell


class _Linear:
    """Writes `{term: weight}` sums over binary features as weights and biases.

    A unit feature is at `low` (0) or `high` (1), so `w * feature` is
    `w / (high - low) * value - w * low / (high - low)`.
    """

    def __init__(self, order, low, high):
        self.index = {name: i for i, name in enumerate(order)}
        self.low, self.span = low, high - low

    def fill(self, terms, kernel, column, bias=None):
        """Adds `GAIN * terms` of unit features into `kernel[:, column]`."""
        constant = 0.0
        for term, weight in terms.items():
            if term == "one":
                constant += weight
            elif term in self.index:
                kernel[self.index[term], column] += GAIN * weight / self.span
                constant -= weight * self.low / self.span
            else:
                raise ValueError(f"a head or action reads {term!r}, not a unit")
        if bias is not None:
            bias[column] += GAIN * constant
        return GAIN * constant


def set_hand_built_weights(model, language):
    """Writes the hand-built automaton of `language` into `model`'s weights.

    Args:
        model: a recognizer of `zoo.recognizer` with a `stack_rnn` or
            `diffstk_rnn` cell of at least the circuit's units (8 for
            palindromes, 7 for D2; the others are left unread), stack elements of at
            least as many entries as the circuit pushes (2 and 3) and an
            embedding at least as wide as the vocabulary (6 and 7).
        language: `"palindrome"` or `"D2"`.

    Returns:
        `model`, its weights replaced.
    """
    if language not in CIRCUITS:
        raise ValueError(
            f"language must be one of {', '.join(CIRCUITS)}; received {language!r}."
        )
    circuit = CIRCUITS[language]()
    parts = zoo.model_parts(model)
    cell = _cell(parts)
    diffstk = isinstance(cell, DiffStkRNNCell)
    units = list(circuit["units"])
    vocab = languages.vocabulary_size(language)
    embedding = parts.embedding
    width = cell.stack_width
    pushed = max(circuit["push"]) + 1
    if (
        cell.units < len(units)
        or width < pushed
        or embedding.output_dim < vocab
        or embedding.input_dim != vocab
    ):
        raise ValueError(
            f"the {language} circuit needs >= {len(units)} units, stack elements "
            f">= {pushed} wide and an embedding of {vocab} ids into >= {vocab} "
            f"dimensions; received {cell.units} units, width {width}, embedding "
            f"{embedding.input_dim} -> {embedding.output_dim}."
        )
    if diffstk:
        scale = cell.activation_scale
        low, high = -scale, scale
    else:
        low, high = 0.0, 1.0
    linear = _Linear(units, low, high)
    n = cell.units
    kernel = np.zeros((embedding.output_dim, n))
    recurrent = np.zeros((n, n))
    bias = np.zeros(n)
    read = np.zeros((cell.read_depth * width, n))
    for column, name in enumerate(units):
        for term, weight in circuit["units"][name].items():
            if term == "one":
                bias[column] += GAIN * weight
            elif term[0] == "x":
                kernel[term[1], column] += GAIN * weight  # one-hot embedding rows
            elif term[0] == "prev":
                if diffstk and term[1] in circuit["slots"].values():
                    raise ValueError(f"slot unit {term[1]} is read recurrently")
                row = units.index(term[1])
                recurrent[row, column] += GAIN * weight / linear.span
                bias[column] -= GAIN * weight * low / linear.span
            elif diffstk:  # the read reaches z^ through a slot unit, then R
                slot = units.index(circuit["slots"][term[1]])
                recurrent[slot, column] += GAIN * weight / READ_SCALE
            else:  # the StackRNN adds P S[0] to the pre-activation itself
                read[term[1], column] += GAIN * weight
    if diffstk:
        for entry, name in circuit["slots"].items():
            read[entry, units.index(name)] = READ_SCALE
    embedding.embeddings.assign(np.eye(vocab, embedding.output_dim))
    stack = cell.stack
    actions = np.zeros((n, stack.num_actions))
    action_bias = np.zeros(stack.num_actions)
    for action, terms in circuit["actions"].items():
        if action < stack.num_actions:
            linear.fill(terms, actions, action, action_bias)
    push = np.zeros((n, width))
    push_bias = np.full(width, -GAIN)  # entries the circuit does not use: 0
    for entry, terms in circuit["push"].items():
        push_bias[entry] = 0.0
        linear.fill(terms, push, entry, push_bias)
    heads = {}
    for head, columns in (
        ("next_symbol", circuit["next_symbol"]),
        ("accept", {0: circuit["accept"]}),
    ):
        size = len(columns)
        weights, biases = np.zeros((n, size)), np.zeros(size)
        for column, terms in columns.items():
            linear.fill(terms, weights, column, biases)
        heads[head] = (weights, biases)
    if diffstk:
        controller = cell.controller
        controller.kernel.assign(kernel)
        controller.recurrent_kernel.assign(recurrent)
        controller.bias.assign(bias)
    else:
        cell.kernel.assign(kernel)
        cell.recurrent_kernel.assign(recurrent)
        cell.bias.assign(bias)
    stack.read_kernel.assign(read)
    stack.action_kernel.assign(actions)
    stack.action_bias.assign(action_bias)
    stack.push_kernel.assign(push)
    stack.push_bias.assign(push_bias)
    for head, (weights, biases) in heads.items():
        layer = parts.heads[head]
        layer.kernel.assign(weights)
        layer.bias.assign(biases)
    return model
