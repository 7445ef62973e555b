"""The engine: ``Session`` (made of parts, one a module: see ``session.py``) and the workers it asks."""

from .calls import SUMMARY_PREFIX
from .session import Session
from .workers import Worker, WorkerLike, chat_worker

__all__ = ["Session", "Worker", "WorkerLike", "chat_worker", "SUMMARY_PREFIX"]
