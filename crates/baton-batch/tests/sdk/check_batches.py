"""The official SDKs' batch methods against baton's batch service.

Usage: check_batches.py BASE_URL (the server root, without /v1). Every object the service
returns is validated strictly with the SDK's own model; prints one line per check and
"N failed" at the end.
"""

import json
import sys
import time

import anthropic
import openai
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
from openai.types import Batch, FileObject
from openai.types.chat import ChatCompletion

base = sys.argv[1].rstrip("/")
failures = 0


def check(name, fn):
    global failures
    try:
        fn()
        print("ok", name)
    except Exception as exc:  # noqa: BLE001 - every failure is reported
        failures += 1
        print("FAILED", name, type(exc).__name__, exc)


def wait(retrieve, done):
    for _ in range(500):
        batch = retrieve()
        if done(batch):
            return batch
        time.sleep(0.02)
    raise TimeoutError("the batch never ended")


def openai_chat():
    client = openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)
    lines = [
        {"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"hi {i}"}]}}
        for i in range(3)
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    raw = client.files.with_raw_response.create(file=("batch.jsonl", data), purpose="batch")
    file = FileObject.model_validate(raw.http_response.json())
    raw = client.batches.with_raw_response.create(
        input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h",
        metadata={"baton_submission": "token-1"},
    )
    batch = Batch.model_validate(raw.http_response.json())
    batch = wait(
        lambda: Batch.model_validate(
            client.batches.with_raw_response.retrieve(batch.id).http_response.json()
        ),
        lambda b: b.status in ("completed", "failed", "expired", "cancelled"),
    )
    assert batch.status == "completed", batch.status
    assert batch.request_counts.completed == 3, batch.request_counts
    content = client.files.content(batch.output_file_id).text
    got = [json.loads(line) for line in content.splitlines() if line.strip()]
    assert [line["custom_id"] for line in got] == ["req-0", "req-1", "req-2"], got
    for line in got:
        ChatCompletion.model_validate(line["response"]["body"])
    assert batch.metadata == {"baton_submission": "token-1"}, batch.metadata


def openai_list():
    openai_chat()
    openai_chat()
    client = openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)
    raw = client.batches.with_raw_response.list(limit=1)
    page = raw.http_response.json()
    assert page["object"] == "list" and page["has_more"] is True, page
    for batch in page["data"]:
        Batch.model_validate(batch)
    # The SDK's own paging (after = the last id) walks every batch, newest first.
    ids = [b.id for b in client.batches.list(limit=1)]
    assert len(ids) >= 2 and ids == sorted(ids, reverse=True), ids


def anthropic_messages():
    client = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
    raw = client.messages.batches.with_raw_response.create(
        requests=[
            {"custom_id": f"req-{i}",
             "params": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"hi {i}"}]}}
            for i in range(3)
        ]
    )
    batch = MessageBatch.model_validate(raw.http_response.json())
    batch = wait(
        lambda: MessageBatch.model_validate(
            client.messages.batches.with_raw_response.retrieve(batch.id).http_response.json()
        ),
        lambda b: b.processing_status == "ended",
    )
    assert batch.request_counts.succeeded == 3, batch.request_counts
    results = list(client.messages.batches.results(batch.id))
    assert [r.custom_id for r in results] == ["req-0", "req-1", "req-2"], results
    for result in results:
        MessageBatchIndividualResponse.model_validate(result.model_dump())
        assert result.result.type == "succeeded", result


def anthropic_list():
    anthropic_messages()
    anthropic_messages()
    client = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
    raw = client.messages.batches.with_raw_response.list(limit=1)
    page = raw.http_response.json()
    assert page["has_more"] is True and page["first_id"] == page["last_id"], page
    for batch in page["data"]:
        MessageBatch.model_validate(batch)
    ids = [b.id for b in client.messages.batches.list(limit=1)]
    assert len(ids) >= 2 and ids == sorted(ids, reverse=True), ids


check("openai files + batches over chat completions", openai_chat)
check("anthropic message batches", anthropic_messages)
check("openai batch list, paged", openai_list)
check("anthropic message batch list, paged", anthropic_list)
print(f"{failures} failed")
sys.exit(1 if failures else 0)
