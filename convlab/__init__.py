"""convlab: understand and tune branching LLM conversations.

An executable, deterministic model of the engine's session protocol
(``Session``), shipped fake providers, exact offline token counts, importers
for real chat logs, replay and strategy sweeps, and Jupyter widgets.

Heavy parts (pandas, ipywidgets, tiktoken's data) load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .errors import (
    CacheWarning as CacheWarning,
    CallCancelled as CallCancelled,
    ConfigError as ConfigError,
    ExploreError as ExploreError,
    LogError as LogError,
    LogWarning as LogWarning,
    PriceError as PriceError,
    ProviderError as ProviderError,
    ReadError as ReadError,
    ReadWarning as ReadWarning,
    Refused as Refused,
    SummaryWarning as SummaryWarning,
    TokenizerError as TokenizerError,
    TuneWarning as TuneWarning,
)

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports each on first use
    from .context import ContextConfig as ContextConfig, Strategy as Strategy, kept as kept, load_config as load_config
    from .conversation import Conversation as Conversation
    from .engine import Session as Session, chat_worker as chat_worker
    from .explore.branches import compare as compare
    from .explore.matches import find as find
    from .explore.sessions import merge as merge, summarize as summarize
    from .explore.writing import write as write
    from .frames import conversations_frame as conversations_frame, frame as frame
    from .importers import read as read
    from .providers import EchoLLM as EchoLLM, ScriptedLLM as ScriptedLLM, provider as provider
    from .providers.anthropic_chat import AnthropicChat as AnthropicChat
    from .providers.local_chat import LocalChat as LocalChat
    from .providers.openai_chat import OpenAIChat as OpenAIChat
    from .replaying.driver import replay as replay  # the function; the package is convlab.replaying
    from .replaying.model import ReplayLLM as ReplayLLM
    from .replaying.result import Replay as Replay
    from .text import brief as brief, readable as readable
    from .tokens import content_text as content_text, count_tokens as count_tokens
    from .tree import Tree as Tree, input_tokens as input_tokens, newest_leaf as newest_leaf
    from .tuning.grid import config_grid as config_grid
    from .tuning.presets import presets as presets
    from .tuning.ranking import rank as rank
    from .tuning.retention import retention as retention, retention_cost as retention_cost
    from .tuning.search import search as search
    from .tuning.sweep import tune as tune, tune_cost as tune_cost
    from .widgets import (
        ChatView as ChatView,
        ContextGauge as ContextGauge,
        DecisionPanel as DecisionPanel,
        EventLog as EventLog,
        Lab as Lab,
        TreeView as TreeView,
    )

__version__ = "0.1.0"

# name -> module that defines it; imported on first attribute access
_LAZY = {
    "Session": "convlab.engine",
    "chat_worker": "convlab.engine",
    "load_config": "convlab.context",
    "ContextConfig": "convlab.context",
    "Strategy": "convlab.context",
    "EchoLLM": "convlab.providers",
    "ScriptedLLM": "convlab.providers",
    "ReplayLLM": "convlab.replaying.model",
    "OpenAIChat": "convlab.providers.openai_chat",
    "AnthropicChat": "convlab.providers.anthropic_chat",
    "LocalChat": "convlab.providers.local_chat",
    "provider": "convlab.providers",
    "count_tokens": "convlab.tokens",
    "content_text": "convlab.tokens",
    "brief": "convlab.text",
    "readable": "convlab.text",
    "kept": "convlab.context",
    "newest_leaf": "convlab.tree",
    "input_tokens": "convlab.tree",
    "Tree": "convlab.tree",
    "Conversation": "convlab.conversation",
    "read": "convlab.importers",
    "frame": "convlab.frames",
    "conversations_frame": "convlab.frames",
    "replay": "convlab.replaying.driver",
    "tune": "convlab.tuning.sweep",
    "tune_cost": "convlab.tuning.sweep",
    "rank": "convlab.tuning.ranking",
    "config_grid": "convlab.tuning.grid",
    "presets": "convlab.tuning.presets",
    "Replay": "convlab.replaying.result",
    "retention": "convlab.tuning.retention",
    "retention_cost": "convlab.tuning.retention",
    "search": "convlab.tuning.search",
    "find": "convlab.explore.matches",
    "compare": "convlab.explore.branches",
    "write": "convlab.explore.writing",
    "merge": "convlab.explore.sessions",
    "summarize": "convlab.explore.sessions",
    "Lab": "convlab.widgets",
    "TreeView": "convlab.widgets",
    "ChatView": "convlab.widgets",
    "ContextGauge": "convlab.widgets",
    "DecisionPanel": "convlab.widgets",
    "EventLog": "convlab.widgets",
}

# built from _LAZY so that each lazy name is written once (tests/test_package.py pins the list)
__all__ = sorted(  # noqa: PLE0605
    ["CacheWarning", "CallCancelled", "ConfigError", "ExploreError", "LogError", "LogWarning", "PriceError", "ProviderError", "ReadError", "ReadWarning", "Refused", "SummaryWarning",
     "TokenizerError", "TuneWarning", *_LAZY]
)


#: public modules, imported on first attribute access (``convlab.compact.sliding_window(...)``,
#: ``convlab.tuning.presets.AUTO``); ``cache`` is ``prompt_cache``'s earlier name
_MODULES = {"replaying": "convlab.replaying", "tuning": "convlab.tuning", "compact": "convlab.tuning.compact", "prompt_cache": "convlab.replaying.prompt_cache",
            "cache": "convlab.replaying.prompt_cache", "prices": "convlab.replaying.prices",
            "explore": "convlab.explore"}

def __getattr__(name: str):
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'convlab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
