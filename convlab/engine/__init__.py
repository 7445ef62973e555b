"""The engine: ``Session`` and what it takes (a worker). See ``session.py``."""

from .session import SUMMARY_PREFIX, Session, Worker, WorkerLike, chat_worker

__all__ = ["Session", "Worker", "WorkerLike", "chat_worker", "SUMMARY_PREFIX"]
