"""Issue 12: ``convlab.provider(spec)``, what making a real provider checks, and
that ``import convlab`` never imports an SDK."""

from __future__ import annotations

import copy
import json
import pickle
import socket
import subprocess
import sys

import httpx
import pytest
import pytest_socket

import convlab
from providers_wire import MockAPI, ok, openai_client, openai_completion

pytestmark = pytest.mark.disable_socket

SDKS = ("openai", "anthropic", "httpx2")


def modules_after(code: str) -> set[str]:
    script = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.enable_socket  # the probe is a subprocess; it opens no socket itself
def test_import_convlab_imports_no_sdk():
    """Issue 12: "import convlab must not import either SDK" (nor does a Session with the fakes)."""
    loaded = modules_after("import convlab, convlab.providers\nconvlab.OpenAIChat, convlab.AnthropicChat\n"
                           "s = convlab.Session(llm=convlab.provider('echo'))")
    assert not [m for m in loaded if m.split(".")[0] in SDKS]
    assert "openai" in modules_after("import convlab\nconvlab.OpenAIChat('m', api_key='-')")  # the probe sees one when it is


def test_the_names_are_exported():
    for name in ("OpenAIChat", "AnthropicChat", "provider"):
        assert name in convlab.__all__ and name in dir(convlab)


@pytest.mark.parametrize("spec, kind, model", [("openai:gpt-4.1-mini", "OpenAIChat", "gpt-4.1-mini"),
                                                ("openai:qwen2.5:7b", "OpenAIChat", "qwen2.5:7b"),
                                                ("anthropic:claude-sonnet-4-5", "AnthropicChat", "claude-sonnet-4-5")])
def test_a_spec_names_a_provider_and_its_model(spec, kind, model, monkeypatch):
    """"convlab.provider(spec): echo, openai:<model>, anthropic:<model>"; the model is
    everything after the first colon (Ollama's names have colons)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
    llm = convlab.provider(spec)
    assert type(llm).__name__ == kind and llm.model == model
    assert "from-the-environment" not in repr(llm)


def test_echo_is_the_shipped_fake():
    llm = convlab.provider("echo")
    assert isinstance(llm, convlab.EchoLLM) and llm.complete({"messages": [{"role": "user", "content": "hi"}]})["content"] == "echo: hi"


@pytest.mark.parametrize("spec, says", [
    ("gpt-4.1-mini", "provider spec 'gpt-4.1-mini': unknown; use echo, local, local:<model.gguf>, openai:<model> or anthropic:<model>"),
    ("openai:", "provider spec 'openai:': names no model; use openai:<model>, e.g. openai:gpt-4.1-mini"),
    ("anthropic:  ", "provider spec 'anthropic:  ': names no model"),
    ("echo:big", "provider spec 'echo:big': echo takes no model"),
    ("OpenAI:gpt-4.1", "provider spec 'OpenAI:gpt-4.1': unknown"),
    ("", "provider spec '': unknown"),
    (None, "provider spec must be a string"),
])
def test_a_bad_spec_is_a_clear_error_naming_it(spec, says):
    with pytest.raises(ValueError) as info:
        convlab.provider(spec)
    assert str(info.value).startswith(says)


def test_making_a_provider_checks_its_arguments():
    client = openai_client(MockAPI(httpx))
    with pytest.raises(ValueError, match="model must be a non-empty string"):
        convlab.OpenAIChat("", client=client)
    with pytest.raises(ValueError, match=r"give a ready client or the options to make one \(base_url\), not both"):
        convlab.OpenAIChat("gpt-4.1-mini", client=client, base_url="http://127.0.0.1:8000/v1")
    with pytest.raises(ValueError, match=r"params\['messages'\] is set by convlab"):
        convlab.OpenAIChat("gpt-4.1-mini", client=client, params={"messages": []})
    with pytest.raises(ValueError, match="params must be a dict"):
        convlab.OpenAIChat("gpt-4.1-mini", client=client, params=[("temperature", 0)])
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'temperature'; request parameters .* go in params=\{\.\.\.\}"):
        convlab.OpenAIChat("gpt-4.1-mini", api_key="-", temperature=0.2)
    with pytest.raises(TypeError, match="max_tokens.*go in params"):
        convlab.AnthropicChat("claude-sonnet-4-5", api_key="-", max_tokens=1000)


def test_a_ready_client_must_be_the_sdks_synchronous_client():
    import anthropic
    import openai

    with pytest.raises(ValueError, match=r"client must be an openai.OpenAI \(it has no chat.completions.create\), got a Client \(an httpx client goes in http_client="):
        convlab.OpenAIChat("gpt-4.1-mini", client=httpx.Client())
    with pytest.raises(ValueError, match="client is an AsyncOpenAI; convlab calls the model synchronously: pass an openai.OpenAI"):
        convlab.OpenAIChat("gpt-4.1-mini", client=openai.AsyncOpenAI(api_key="-"))
    with pytest.raises(ValueError, match="client must be an anthropic.Anthropic"):
        convlab.AnthropicChat("claude-sonnet-4-5", client=openai.OpenAI(api_key="-"))
    with pytest.raises(ValueError, match="client is an AsyncAnthropic"):
        convlab.AnthropicChat("claude-sonnet-4-5", client=anthropic.AsyncAnthropic(api_key="-"))


def test_the_call_s_model_overrides_the_provider_s():
    """PROTOCOL 4: ``llm.call {model}`` (and a strategy's ``model``) choose the model; else the provider's."""
    api = MockAPI(httpx, [ok(openai_completion("a")), ok(openai_completion("b"))])
    llm = convlab.OpenAIChat("gpt-4.1-mini", client=openai_client(api))
    llm.complete({"model": "gpt-4.1-nano", "messages": [{"role": "user", "content": "x"}]})
    llm.complete({"model": None, "messages": [{"role": "user", "content": "x"}]})
    assert [b["model"] for b in api.bodies] == ["gpt-4.1-nano", "gpt-4.1-mini"] and llm.calls == 2


def test_a_provider_is_never_pickled_or_copied_with_its_client():
    """Issue 12 part 2: "the provider is never pickled": it holds a live client and its key."""
    llm = convlab.OpenAIChat("gpt-4.1-mini", client=openai_client(MockAPI(httpx)))
    for attempt in (pickle.dumps, copy.deepcopy):
        with pytest.raises(TypeError, match="is not pickled; make one in each process"):
            attempt(llm)


def test_the_repr_shows_no_credentials_in_a_base_url():
    import openai

    client = openai.OpenAI(api_key="-", base_url="http://me:hunter22@127.0.0.1:8000/v1/?token=abc", http_client=httpx.Client(transport=httpx.MockTransport(MockAPI(httpx))))
    assert repr(convlab.OpenAIChat("qwen2.5", client=client)) == "OpenAIChat('qwen2.5', base_url='http://127.0.0.1:8000/v1')"


def test_no_test_here_can_reach_the_network():
    """pytest-socket blocks every socket (and name lookup) in these modules: a
    provider with a real transport stops before it could connect anywhere."""
    with pytest.warns(UserWarning, match="tried to use socket"), pytest.raises(pytest_socket.SocketBlockedError):
        socket.socket()
    llm = convlab.OpenAIChat("gpt-4.1-mini", api_key="-", base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.warns(UserWarning, match="tried to use socket"), pytest.raises(pytest_socket.SocketBlockedError):
        llm.complete({"messages": [{"role": "user", "content": "hi"}]})
