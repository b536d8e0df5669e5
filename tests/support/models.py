"""A real LangChain chat model for agent tests: it answers from a script and keeps what it was sent."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from pydantic import Field


class RecordingModel(GenericFakeChatModel):
    """A chat model that answers from a script and keeps every message list it was sent."""

    sent: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.sent.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self  # the script decides the tool calls

    def system(self, call: int = -1) -> SystemMessage:
        first = self.sent[call][0]
        assert isinstance(first, SystemMessage)
        return first
