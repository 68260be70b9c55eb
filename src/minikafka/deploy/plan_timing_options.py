"""`--gap-s MIN,MAX`, `--max-down-s S`, `--overlap P` and `--max-at-once N`, shared by `chaos` and `simulate`: the
timing has each command's own defaults, and with the same values (and seed, kinds and duration) both draw the same
fault plan."""

from __future__ import annotations

import argparse

from minikafka.common.cli_support import bounded_int, positive_float, probability
from minikafka.deploy.chaos_schedule import PlanTiming


def gap_range(text: str) -> tuple[float, float]:
    """An argparse `type` for `MIN,MAX` seconds, 0 < MIN <= MAX."""
    low, sep, high = text.partition(",")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not MIN,MAX (seconds)")
    bounds = positive_float(low.strip()), positive_float(high.strip())
    if bounds[0] > bounds[1]:
        raise argparse.ArgumentTypeError(f"{text}: MIN is above MAX")
    return bounds


def add_plan_timing(parser: argparse.ArgumentParser, defaults: PlanTiming) -> None:
    parser.add_argument(
        "--gap-s",
        type=gap_range,
        default=(defaults.min_gap_s, defaults.max_gap_s),
        metavar="MIN,MAX",
        help="seconds between one fault's healing and the next fault, drawn uniformly "
        f"(default {defaults.min_gap_s:g},{defaults.max_gap_s:g})",
    )
    parser.add_argument(
        "--max-down-s",
        type=positive_float,
        default=defaults.max_down_s,
        metavar="S",
        help=f"the longest a lasting fault keeps its node away (default {defaults.max_down_s:g})",
    )


def add_fault_overlap(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--overlap",
        type=probability,
        default=0.0,
        metavar="P",
        help="the probability that a fault strikes while a lasting one is active (on another node, never two "
        "cuts); 0: one at a time",
    )
    parser.add_argument(
        "--max-at-once",
        type=bounded_int(2, 3),
        default=2,
        metavar="N",
        help="with --overlap: a joining fault may itself be joined while fewer than N are active (default 2); a "
        "reassign takes no place",
    )


def plan_timing(args: argparse.Namespace) -> PlanTiming:
    return PlanTiming(min_gap_s=args.gap_s[0], max_gap_s=args.gap_s[1], max_down_s=args.max_down_s)


def timing_words(timing: PlanTiming, defaults: PlanTiming) -> list[str]:
    """The options that give `timing` where it differs from `defaults`, for a replay command."""
    words = []
    if (timing.min_gap_s, timing.max_gap_s) != (defaults.min_gap_s, defaults.max_gap_s):
        words += ["--gap-s", f"{timing.min_gap_s!r},{timing.max_gap_s!r}"]
    if timing.max_down_s != defaults.max_down_s:
        words += ["--max-down-s", repr(timing.max_down_s)]
    return words
