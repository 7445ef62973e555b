"""``convlab search``: the cheapest config of a space around a base, printed as TOML.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from ..tuning.grid import EXAMPLE
from .arguments import add_reading_options, check_pricing, in_config, job_count, read_config
from .figures import SCOPE, broke, figure
from .notes import Failed, Notes, Usage, plural, progress, read_logs

if TYPE_CHECKING:
    from .arguments import Parser

def add(sub: argparse._SubParsersAction[Parser]) -> None:
    search = sub.add_parser(
        "search", help="search a space of context configs for the cheapest that meets constraints; print it as TOML",
        description="Search context configs over chat logs with Optuna (convlab.search): ranges around the base "
                    "config's window, strategy[0].over_tokens and strategy[0].idle_secs, each trial scored by "
                    "replaying the logs, its figures over all of them as tune's ranking sums them (usd: what every "
                    "conversation costs together; saved: the share of the tokens the logs read). A config that makes "
                    "turns fail never wins (--failed lets it). Prints the best config as TOML for "
                    "[agent.<id>.context]; one line on stderr says its value, over how many conversations, and how "
                    "many trials met the constraints; when none did, the closest trials and what each missed (exit 3). "
                    "With --failed, a config that makes turns fail is marked so, as the best or among the closest.")
    search.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    search.add_argument("--base", dest="config", metavar="CFG.toml",
                        help=f"the base context config the space is around (default: the example {EXAMPLE})")
    search.add_argument("--agent", default="bot", help="the agent whose [agent.<id>.context] to use (default bot)")
    search.add_argument("--model", metavar="MODEL", help="price every call in dollars (genai-prices), e.g. claude-sonnet-4-5: "
                                                          "the default objective, usd, needs it")
    search.add_argument("--objective", default="usd", metavar="COLUMN",
                        help="the column of the sweep to minimise (default usd); a leading - maximises it (--objective -saved)")
    search.add_argument("--constraint", action="append", default=[], metavar="'COLUMN OP NUMBER'",
                        help="a bound every config that wins meets, e.g. 'failed_turns == 0' (repeatable; OP one of >= <= > < ==)")
    search.add_argument("--trials", type=job_count, default=60, metavar="N", help="configs to try (default 60)")
    search.add_argument("--seed", type=int, default=0, help="the sampler's seed (default 0): the same seed, the same search")
    search.add_argument("--jobs", type=job_count, metavar="N", help="worker processes (default: one per core; 1: none)")
    search.add_argument("--failed", action="store_true",
                        help="let a config that makes turns fail win (by default it never does: a call the provider "
                             "refused as too long, with nothing that made room, is no answer)")
    add_reading_options(search)
    search.set_defaults(run=run, prompt_cache_ttl=None)


def run(args: argparse.Namespace, out: TextIO, notes: Notes) -> None:
    """The best config of the space around --base, as TOML on stdout; its value and the feasible trials on stderr."""
    from ..context import load_config
    from ..errors import ConfigError
    from ..replaying.options import Options
    from ..tuning.search import BREAKS, check, default_space, search

    check_pricing(args)
    if args.objective.lstrip("-") in ("usd", "baseline_usd", "usd_saved") and args.model is None:
        raise Usage(f"--objective {args.objective} is in dollars: give --model (e.g. --model claude-sonnet-4-5), "
                     f"or another objective (e.g. --objective tokens_read)")
    name, text = read_config(args, "--base")
    try:
        load_config(text, agent=args.agent)
        space = default_space(text, agent=args.agent)
    except ConfigError as err:
        raise in_config(name, err) from None
    try:
        chosen = Options(agent=args.agent, model=args.model, prompt_cache_ttl=args.prompt_cache_ttl)
        settings = dict(base=text, objective=args.objective, constraints=args.constraint)
        check(space, chosen, **settings)
    except ValueError as err:
        raise Usage(str(err).removeprefix("search: ")) from None
    convs = read_logs(args.paths, args, notes)
    with notes.watch("searching"):
        found = search(convs, space, chosen, **settings, trials=args.trials, seed=args.seed, jobs=args.jobs,
                               progress=None if progress(args) else False, failed=args.failed)
    column = args.objective.lstrip("-")
    scope = f"over {plural(len(convs), 'conversation')}"
    if found.best is None:
        given = f" ({', '.join(args.constraint)})" if args.constraint else ""
        lines = [f"no config met the constraints{given} in {plural(len(found.frame), 'trial')}; the closest:"]
        keys = [k for k in space if k != "window"]
        for _, row in found.closest(3).iterrows():
            values = ", ".join(f"{k.rsplit('.', 1)[-1]}={row[k]}" for k in ["window", *keys] if k in row.index)
            breaks = broke(row["failed_turns"], row["lost_calls"])  # --failed: not a missed constraint, still no answer
            said = "failed_turns" in row["missed"] or "lost_calls" in row["missed"]  # the default: a missed constraint
            missed = row["missed"].replace(BREAKS, BREAKS.replace("failed=True", "--failed"))  # the CLI's word for it
            missed += f"; and {breaks}" if breaks and not said else ""
            lines.append(f"  trial {int(row['trial'])} ({values}): {column} = {figure(column, row['value'])} {scope}; "
                         f"missed {missed}")
        raise Failed("\n".join(lines))
    out.write(found.toml())
    best = found.frame[found.frame["trial"] == found.best_trial].iloc[0]
    breaks = broke(best["failed_turns"], best["lost_calls"])
    if breaks:  # --failed let it win: said where the config is, whatever -q says
        out.write(f"# {breaks} {scope}: --failed let it win; a config that breaks turns is no answer as it is\n")
    notes.say(f"best {column} = {figure(column, found.best_value)} {scope} ({SCOPE.get(column, 'the config over every conversation')}; "
              f"trial {found.best_trial}); {found.feasible} of {plural(len(found.frame), 'trial')} feasible")
