"""Check `baton sim-server` against the official OpenAI and Anthropic Python SDKs.

Run by the Rust integration test `sdk` (crates/baton-http/tests/it/sdk.rs), which starts the
servers and passes their addresses in a JSON file:

    {"base": "http://127.0.0.1:PORT/v1",          # a server without faults
     "faults": {"rate-limit": "http://...", ...},  # one server per fault kind, rate 1.0
     "sample": "datasets/sample/sample.json"}       # the tasks the simulated models know

For each of the three APIs it sends plain, cached and reasoning requests, and validates every
raw reply body with the SDK's own pydantic model (`model_validate(..., strict=True)`), failing
on a missing field, a wrongly typed one, and a field the SDK does not know (its models allow
extras, so those are collected by walking `model_extra`). It then goes through the SDK clients
themselves: a reply must parse, `stream=True` must raise `BadRequestError` saying streaming is
not served, and each injected fault must raise the SDK's matching exception class.

Prints one line per check and exits 1 when any failed.
"""

import json
import sys

import anthropic
import httpx
import openai
import pydantic
from anthropic.types import Message
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

ANTHROPIC_VERSION = "2023-06-01"
KEY = "sk-sdk-check-not-a-real-key"
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (f": {detail}" if detail else ""))
    if not ok:
        failures.append(name)


def extras(model, path="$"):
    """Every field the SDK's model does not declare, anywhere in the reply."""
    found = []
    if isinstance(model, pydantic.BaseModel):
        for key in (model.model_extra or {}):
            found.append(f"{path}.{key}")
        for key in type(model).model_fields:
            found += extras(getattr(model, key), f"{path}.{key}")
    elif isinstance(model, list):
        for i, item in enumerate(model):
            found += extras(item, f"{path}[{i}]")
    return found


def validate(name, model_type, body):
    try:
        parsed = model_type.model_validate(body, strict=True)
    except pydantic.ValidationError as e:
        check(name, False, str(e).replace("\n", " | "))
        return None
    unknown = extras(parsed)
    check(name, not unknown, f"fields the SDK does not know: {unknown}" if unknown else "")
    return parsed


def post(base, path, body):
    headers = {"authorization": f"Bearer {KEY}"}
    if path == "/messages":
        headers = {"x-api-key": KEY, "anthropic-version": ANTHROPIC_VERSION}
    r = httpx.post(base + path, json=body, headers=headers, timeout=30)
    return r.status_code, r.json()


def chat_body(prompt, **extra):
    return {"model": "lc", "messages": [{"role": "system", "content": "Be brief."},
                                        {"role": "user", "content": prompt}],
            "max_completion_tokens": 200, **extra}


def responses_body(prompt, **extra):
    return {"model": "lc", "instructions": "Be brief.", "store": False,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}],
            "max_output_tokens": 200, **extra}


def messages_body(prompt, cache=False, **extra):
    block = {"type": "text", "text": prompt}
    if cache:
        block["cache_control"] = {"type": "ephemeral"}
    return {"model": "lc", "system": "Be brief.", "max_tokens": 2048,
            "messages": [{"role": "user", "content": [block]}], **extra}


def raw_replies(base, prompt):
    """Every reply shape, validated strictly."""
    status, body = post(base, "/chat/completions", chat_body(prompt))
    check("chat: 200", status == 200, str(body)[:200])
    validate("chat: plain reply validates", ChatCompletion, body)
    status, body = post(base, "/chat/completions", chat_body(prompt))
    c = validate("chat: cached reply validates", ChatCompletion, body)
    check("chat: second identical prompt reads the cache",
          c is not None and c.usage.prompt_tokens_details.cached_tokens > 0)
    status, body = post(base, "/chat/completions", chat_body(prompt, reasoning_effort="high"))
    c = validate("chat: reasoning reply validates", ChatCompletion, body)
    check("chat: reasoning tokens reported",
          c is not None and c.usage.completion_tokens_details.reasoning_tokens > 0)

    status, body = post(base, "/responses", responses_body(prompt))
    check("responses: 200", status == 200, str(body)[:200])
    validate("responses: plain reply validates", Response, body)
    status, body = post(base, "/responses", responses_body(prompt))
    r = validate("responses: cached reply validates", Response, body)
    check("responses: second identical prompt reads the cache",
          r is not None and r.usage.input_tokens_details.cached_tokens > 0)
    status, body = post(base, "/responses", responses_body(prompt, reasoning={"effort": "medium"}))
    r = validate("responses: reasoning reply validates", Response, body)
    check("responses: reasoning item and tokens",
          r is not None and r.usage.output_tokens_details.reasoning_tokens > 0
          and any(item.type == "reasoning" for item in r.output))

    status, body = post(base, "/messages", messages_body(prompt))
    check("messages: 200", status == 200, str(body)[:200])
    validate("messages: plain reply validates", Message, body)
    cached_prompt = prompt + " (cached)"
    status, body = post(base, "/messages", messages_body(cached_prompt, cache=True))
    m = validate("messages: cache-write reply validates", Message, body)
    check("messages: a breakpoint writes the cache",
          m is not None and m.usage.cache_creation_input_tokens > 0
          and m.usage.cache_creation.ephemeral_5m_input_tokens > 0)
    status, body = post(base, "/messages", messages_body(cached_prompt, cache=True))
    m = validate("messages: cache-read reply validates", Message, body)
    check("messages: the same breakpoint reads the cache",
          m is not None and m.usage.cache_read_input_tokens > 0)
    status, body = post(base, "/messages", messages_body(
        prompt, thinking={"type": "enabled", "budget_tokens": 1024}))
    m = validate("messages: thinking reply validates", Message, body)
    check("messages: a signed thinking block before the text",
          m is not None and [b.type for b in m.content] == ["thinking", "text"])
    status, body = post(base, "/messages", messages_body(prompt, output_config={"effort": "high"}))
    validate("messages: effort reply validates", Message, body)

    for name, body in [
        ("a thinking budget below 1024", messages_body(
            prompt, thinking={"type": "enabled", "budget_tokens": 512})),
        ("a thinking budget not below max_tokens", messages_body(
            prompt, thinking={"type": "enabled", "budget_tokens": 4096})),
        ("an empty user turn", {**messages_body(prompt), "messages": [
            {"role": "user", "content": ""}]}),
    ]:
        status, body = post(base, "/messages", body)
        check(f"messages: {name} is a 400", status == 400
              and body.get("error", {}).get("type") == "invalid_request_error", str(body)[:200])
    status, body = post(base, "/messages", {**messages_body(prompt), "messages": [
        {"role": "user", "content": prompt}, {"role": "assistant", "content": ""}]})
    check("messages: an empty final assistant prefill is accepted", status == 200, str(body)[:200])
    status, body = post(base, "/chat/completions", {**chat_body(prompt, reasoning_effort="low"),
                                                    "max_tokens": 100})
    check("chat: max_tokens with a reasoning effort is a 400", status == 400, str(body)[:200])


def sdk_clients(base, prompt):
    """The SDK clients parse replies and refuse streams."""
    oai = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=30)
    ant = anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key=KEY, max_retries=0,
                              timeout=30)
    c = oai.chat.completions.create(model="lc", messages=[{"role": "user", "content": prompt}],
                                    max_completion_tokens=200)
    check("openai client: chat reply", bool(c.choices[0].message.content))
    r = oai.responses.create(model="lc", input=prompt, max_output_tokens=200, store=False)
    check("openai client: responses reply", bool(r.output_text))
    m = ant.messages.create(model="lc", max_tokens=200,
                            messages=[{"role": "user", "content": prompt}])
    check("anthropic client: messages reply", m.content[0].type == "text" and bool(m.content[0].text))

    streams = [
        ("openai client: chat stream=True", openai.BadRequestError,
         lambda: list(oai.chat.completions.create(
             model="lc", messages=[{"role": "user", "content": prompt}], stream=True))),
        ("openai client: responses stream=True", openai.BadRequestError,
         lambda: list(oai.responses.create(model="lc", input=prompt, stream=True))),
        ("anthropic client: messages stream=True", anthropic.BadRequestError,
         lambda: list(ant.messages.create(model="lc", max_tokens=100, stream=True,
                                          messages=[{"role": "user", "content": prompt}]))),
    ]
    for name, expected, call in streams:
        try:
            call()
            check(f"{name} raises {expected.__name__}", False, "no error")
        except expected as e:
            check(f"{name} raises {expected.__name__}", "stream" in str(e), str(e)[:160])
        except Exception as e:  # noqa: BLE001 - any other class is the failure being checked
            check(f"{name} raises {expected.__name__}", False, f"{type(e).__name__}: {e}"[:200])


# What each injected fault must raise; `None` means the call succeeds (an empty reply).
EXPECTED = {
    "rate-limit": (openai.RateLimitError, anthropic.RateLimitError),
    "insufficient-quota": (openai.RateLimitError, anthropic.RateLimitError),
    "server-error": (openai.InternalServerError, anthropic.InternalServerError),
    "overloaded": (openai.InternalServerError, anthropic.OverloadedError),
    "reset": (openai.APIConnectionError, anthropic.APIConnectionError),
    "stall": (openai.APITimeoutError, anthropic.APITimeoutError),
    # A 200 whose body is cut off: both SDKs let the JSON decoder's error through as it is.
    "malformed": (json.JSONDecodeError, json.JSONDecodeError),
    "empty": (None, None),
}


def faults(urls, prompt):
    for kind, base in sorted(urls.items()):
        want_oai, want_ant = EXPECTED[kind]
        timeout = 2.0 if kind == "stall" else 30
        oai = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=timeout)
        ant = anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key=KEY,
                                  max_retries=0, timeout=timeout)
        calls = [
            ("openai chat", want_oai, lambda: oai.chat.completions.create(
                model="lc", messages=[{"role": "user", "content": prompt}],
                max_completion_tokens=100)),
            ("openai responses", want_oai, lambda: oai.responses.create(
                model="lc", input=prompt, max_output_tokens=100, store=False)),
            ("anthropic messages", want_ant, lambda: ant.messages.create(
                model="lc", max_tokens=100, messages=[{"role": "user", "content": prompt}])),
        ]
        for api, expected, call in calls:
            name = f"fault {kind} on {api} raises {expected.__name__ if expected else 'nothing'}"
            try:
                reply = call()
                if expected is None:
                    text = getattr(reply, "output_text", None)
                    if text is None and hasattr(reply, "choices"):
                        text = reply.choices[0].message.content
                    if text is None and hasattr(reply, "content"):
                        text = "".join(b.text for b in reply.content if b.type == "text")
                    check(name, text == "", f"text {text!r}")
                else:
                    check(name, False, "the call succeeded")
            except Exception as e:  # noqa: BLE001 - the class is what is checked
                ok = expected is not None and isinstance(e, expected)
                if ok and kind == "insufficient-quota" and api.startswith("openai"):
                    ok = getattr(e, "code", None) == "insufficient_quota"
                check(name, ok, f"{type(e).__name__}: {e}"[:200])


def main():
    with open(sys.argv[1]) as f:
        config = json.load(f)
    with open(config["sample"]) as f:
        tasks = json.load(f)
    prompt = tasks[0]["shards"][0]["shard"]
    print(f"openai {openai.__version__}, anthropic {anthropic.__version__}, "
          f"pydantic {pydantic.VERSION}")
    raw_replies(config["base"], prompt)
    sdk_clients(config["base"], prompt)
    faults(config["faults"], prompt)
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
