"""Records and search results in the offline handler: a web search's hits printed as
``Label: value`` blocks kept whole (title and URL on one line, no relevance score),
JSON records that do not repeat the call's own arguments, amounts by kind kept with
their record, a relevance score worth nothing, a query echoed by the result said once."""

from __future__ import annotations

import json

from cast.messages import Message, ToolCall
from csum.handlers import summarize_extractive
from csum.handlers._extractive.results import (
    is_relevance_score,
    labelled_records,
    literal_records,
    take_documents,
)
from csum.prompt import summary_request


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def summarize(name: str, arguments: dict[str, object], output: str, budget: int) -> str:
    call = ToolCall(id="c1", name=name, arguments=json.dumps(arguments))
    prompt = summary_request([], [Message.ai("", call), Message.tool("c1", name, output)])
    summary = summarize_extractive(prompt, budget)
    assert utf8(summary) <= budget
    return summary


# A search tool's hits as LangChain's Tavily tool and pydantic-ai's examples print them.
SEARCH_HITS = (
    (
        "tokio - crates.io: Rust Package Registry",
        "https://crates.io/crates/tokio",
        "An event-driven, non-blocking I/O platform for writing asynchronous I/O backed "
        "applications. Latest version 1.41.1, released 2024-11-07; MSRV is Rust 1.70.",
        0.9731,
    ),
    (
        "Releases · tokio-rs/tokio - GitHub",
        "https://github.com/tokio-rs/tokio/releases",
        "Tokio v1.41.0 adds a task dump on Linux and stabilises the unconstrained helper. "
        "Tokio v1.40.0 fixed a regression in the multi-threaded scheduler that affected a "
        "few users.",
        0.9112,
    ),
    (
        "Tokio LTS releases and support window",
        "https://tokio.rs/blog/2024-lts",
        "The 1.38.x line is an LTS release supported until July 2025; the 1.36.x line until "
        "March 2025. Pin ~1.38 when you need a conservative upgrade path.",
        0.8524,
    ),
    (
        "How do I upgrade tokio 0.2 to 1.0? - Stack Overflow",
        "https://stackoverflow.com/questions/65496110/upgrade-tokio-0-2-to-1-0",
        "Replace tokio::runtime::Builder::threaded_scheduler with new_multi_thread and "
        "enable_all; the time and net features must be enabled explicitly in Cargo.toml.",
        0.6013,
    ),
)
HITS = "\n".join(
    f"Title: {title}\nURL: {url}\nContent: {content}\nScore: {score}\n"
    for title, url, content, score in SEARCH_HITS
)


def test_labelled_hits_are_joined_title_and_url_first_without_their_score() -> None:
    ranks: dict[str, int] = {}
    lines = labelled_records(HITS.splitlines(), ranks)
    first = "Title: tokio - crates.io: Rust Package Registry URL: https://crates.io/crates/tokio"
    assert lines[0] == first
    assert lines[1].startswith("Content: An event-driven")  # the hit's text: its own line
    assert ranks[first] == 0
    assert not any(line.startswith("Score:") for line in lines)
    assert sum(1 for line in lines if line.startswith("Title: ")) == 4
    heads = {line: rank for line, rank in ranks.items() if line.startswith("Title: ")}
    assert sorted(heads.values()) == [0, 1, 2, 3]
    assert ranks[lines[1]] == 1  # the top hit's text: a place below the hit


def test_short_fields_join_the_title_first_then_the_address() -> None:
    text = (
        "URL: https://a.example/x\nTitle: First\nPublished: 2024-05-02\n\n"
        "URL: https://b.example/y\nTitle: Second\nPublished: 2023-11-30"
    )
    lines = labelled_records(text.splitlines(), {})
    assert lines[0] == "Title: First URL: https://a.example/x Published: 2024-05-02"
    assert "Title: Second URL: https://b.example/y Published: 2023-11-30" in lines


def test_lines_that_are_not_repeated_records_are_left_as_they_are() -> None:
    once = ["Title: Only one", "URL: https://a.example/", "Content: something"]
    assert labelled_records(once, {}) == once
    prose = ["Note: the build is green.", "Next: run the migration.", "plain text"]
    assert labelled_records(prose, {}) == prose


def test_a_search_summary_keeps_the_top_hit_whole_and_no_score_line() -> None:
    for budget in range(160, 700, 23):
        summary = summarize("search", {"query": "latest tokio version"}, HITS, budget)
        assert "Score:" not in summary, budget
        for line in summary.splitlines():
            if "https://crates.io/crates/tokio" in line:
                assert "Title: tokio - crates.io" in line, (budget, line)
    quarter = summarize("search", {"query": "latest tokio version"}, HITS, len(HITS) // 4)
    assert (
        "Title: tokio - crates.io: Rust Package Registry URL: https://crates.io/crates/tokio\n"
        in quarter
    )


FLIGHTS = [
    {
        "flight_number": f"ZX{number}",
        "origin": "SEA",
        "destination": "BOS",
        "scheduled_departure_time_est": f"{hour:02d}:00:00",
        "scheduled_arrival_time_est": f"{hour + 5:02d}:30:00",
        "status": "available",
        "available_seats": {"basic_economy": 9, "economy": 4 + hour, "business": 2},
        "prices": {"basic_economy": 61 + hour, "economy": price, "business": 3 * price},
    }
    for number, hour, price in ((311, 6, 148), (327, 9, 163), (388, 13, 119), (402, 17, 204))
]


def test_records_do_not_repeat_the_calls_arguments() -> None:
    output = json.dumps(FLIGHTS)
    arguments = {"origin": "SEA", "destination": "BOS", "date": "2024-06-02"}
    summary = summarize("search_direct_flight", arguments, output, len(output) // 4)
    body = summary.split("\n", 1)[1]
    assert "origin=SEA" not in body
    assert "destination=BOS" not in body


def test_a_relevance_score_is_recognised_by_its_key_and_its_range() -> None:
    assert is_relevance_score("score", 0.97)
    assert is_relevance_score("relevance_score", 0.2)
    assert not is_relevance_score("score", 87)  # a test's or a game's score: a count
    assert not is_relevance_score("price", 0.97)
    assert not is_relevance_score("score", "0.97")


PAGE = "\n".join(
    [
        "Litestream",
        "Streaming replication for SQLite.",
        "Litestream runs as a background process and safely replicates changes "
        "incrementally to S3, GCS, Azure Blob Storage, SFTP or another file system.",
        "Install it with `brew install benbjohnson/litestream/litestream` on macOS.",
        *[f"Step {n}: read the guide's section {n} before going on." for n in range(1, 40)],
        "Do not run two Litestream instances against the same database: they overwrite "
        "each other's WAL position and the replica becomes corrupt.",
        "Version 0.3.13 is the last release of the 0.3 line; 0.5.0 changes the config format.",
    ]
)
FETCHED = {
    "type": "web_fetch_result",
    "url": "https://litestream.io/",
    "content": {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": PAGE},
        "title": "Litestream - Streaming SQLite Replication",
    },
    "retrieved_at": "2025-10-02T08:15:44.120000+00:00",
}


def test_a_document_inside_json_is_taken_out_without_mutating_the_value() -> None:
    documents: list[str] = []
    value = json.loads(json.dumps(FETCHED))
    rest = take_documents(value, documents)
    assert documents == [PAGE]
    assert rest == {
        **FETCHED,
        "content": {**FETCHED["content"], "source": {"type": "text", "media_type": "text/plain"}},
    }
    assert value == FETCHED  # the parsed value is left as it was
    short = {"note": "one line", "items": [{"text": "a\nb"}]}
    assert take_documents(short, documents) == short
    assert len(documents) == 1


def test_a_fetched_pages_lines_are_read_like_any_output() -> None:
    output = json.dumps(FETCHED)
    summary = summarize("web_fetch", {"url": "https://litestream.io/"}, output, len(output) // 4)
    assert "title=Litestream - Streaming SQLite Replication" in summary
    # The constraint near the page's end is kept: before, the page was one field cut to
    # a window of its first few hundred characters.
    assert "Do not run two Litestream instances against the same database" in summary
    assert "Version 0.3.13 is the last release" in summary


def flat(value: object) -> list[tuple[str, str, float]]:
    """Fields as the handler flattens them (path, text, weight), for one level of nesting."""
    assert isinstance(value, dict)
    out: list[tuple[str, str, float]] = []
    for key, item in value.items():
        if isinstance(item, dict):
            out += [(key, f"{k}={v}", 1.0) for k, v in item.items()]
        else:
            out.append(("", f"{key}={item}", 1.0))
    return out


def test_an_object_printed_by_python_or_as_json_becomes_its_records_lines() -> None:
    repr_line = (
        "Content: {'station': {'id': 'KBOS', 'temp_c': 4.4}, 'observed': '2025-01-09 07:54'}"
    )
    json_line = 'Result: {"station": {"id": "KBOS", "temp_c": 4.4}, "observed": "2025-01-09 07:54"}'
    for line, label in ((repr_line, "Content"), (json_line, "Result")):
        assert literal_records(["before", line], flat) == [
            "before",
            f"{label}.station: id=KBOS temp_c=4.4",
            f"{label}: observed=2025-01-09 07:54",
        ]
    untouched = [
        "Content: {'id': 'KBOS', 'temp_c': 4.4}",  # flat: a one-line record already
        "Content: {'id': KBOS}",  # not a literal
        "a line with {braces} in it",
    ]
    assert literal_records(untouched, flat) == untouched


WEATHER = {
    "location": {"name": "Reykjavik", "country": "Iceland", "tz_id": "Atlantic/Reykjavik"},
    "current": {
        "last_updated": "2025-01-09 07:45",
        "temp_c": -3.2,
        "feelslike_c": -9.1,
        "condition": {"text": "Light snow", "code": 1213},
        "wind_kph": 31.0,
        "humidity": 86,
        "vis_km": 4.0,
        "pressure_mb": 1002.0,
        "uv": 0.0,
    },
}


def test_a_python_printed_result_keeps_its_values_with_their_keys() -> None:
    output = "\n".join(
        [
            "Title: Weather in Reykjavik",
            "URL: https://www.weatherapi.com/",
            f"Content: {WEATHER!r}",
            "Score: 0.97",
            "",
            "Title: Reykjavik 14 day forecast",
            "URL: https://www.timeanddate.com/weather/iceland/reykjavik/ext",
            "Content: Snow showers through Friday, clearing on Saturday with lows of -8 °C.",
            "Score: 0.88",
        ]
    )
    summary = summarize("search", {"query": "weather Reykjavik"}, output, len(output) // 3)
    assert "temp_c=-3.2" in summary
    summary = summarize("search", {"query": "weather Reykjavik"}, output, len(output) // 2)
    assert "Title: Weather in Reykjavik URL: https://www.weatherapi.com/\n" in summary
    assert "temp_c=-3.2" in summary


def test_a_records_line_stays_within_a_window_its_other_fields_lines_of_their_own() -> None:
    fields = [
        "Name: api-7d9f8b6c5-x2k4q",
        "Namespace: production",
        "Priority: 0",
        "Service Account: api-runtime",
        "Node: ip-10-0-3-17.eu-west-1.compute.internal/10.0.3.17",
        "Start Time: Thu, 09 Jan 2025 07:12:40 +0000",
        "Labels: app=api pod-template-hash=7d9f8b6c5",
        "Status: Running",
        "IP: 10.0.3.201",
        "Controlled By: ReplicaSet/api-7d9f8b6c5",
    ]
    second = [
        field.replace("x2k4q", "m8p1z").replace("10.0.3.201", "10.0.3.88") for field in fields
    ]
    lines = labelled_records([*fields, "", *second], {})
    assert all(len(line) <= 220 for line in lines)
    assert lines[0].startswith("Name: api-7d9f8b6c5-x2k4q Namespace: production")
    text = "\n".join(lines)
    for field in fields + second:
        assert field in text


def test_messages_of_a_log_or_a_checker_are_not_records() -> None:
    log = [
        "Warning: the lockfile is older than package.json",
        "Error: Cannot find module 'left-pad' from src/index.js",
        "Warning: peer dependency react@18 not installed",
        "Error: Build failed with 1 error",
    ]
    assert labelled_records(log, {}) == log
