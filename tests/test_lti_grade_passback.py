"""Grades back to the LMS by LTI Advantage (``attention_course_instructor.grading.lti_ags``).

A test platform (``tests/lti_platform.py``) runs as its own process on 127.0.0.1 with the tool's
public key registered; the passback command, run as an instructor runs it, signs in with the
tool's private key and sends the gradebook of ``test_lms_export`` (two labs, three students: one
with both labs, one with Lab 8, one with nothing). The platform records what it accepted.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from test_lms_export import course  # noqa: F401  (the gradebook fixture)

HERE = Path(__file__).resolve().parent
CLIENT_ID = "course-tool"


def key_pair(folder: Path, name: str) -> Path:
    """An RSA key for the tool: ``<name>.pem`` (private) and ``<name>-public.pem``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = folder / f"{name}.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    (folder / f"{name}-public.pem").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    folder = tmp_path_factory.mktemp("platform")
    key_pair(folder, "tool-key")
    key_pair(folder, "another-key")
    process = subprocess.Popen([sys.executable, str(HERE / "lti_platform.py"), "--port", "0",
                                "--tool-key", str(folder / "tool-key-public.pem"),
                                "--client-id", CLIENT_ID], stdout=subprocess.PIPE, text=True)
    try:
        base = process.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:"), base
        yield base, folder
    finally:
        process.terminate()
        process.wait(timeout=10)


def platform_file(folder: Path, base: str, key: str = "tool-key.pem", **changes) -> Path:
    values = {"issuer": base, "client_id": CLIENT_ID, "deployment_id": "deployment-1",
              "token_url": f"{base}/token", "lineitems": f"{base}/lineitems",
              "private_key": key, "key_id": "course-tool-1", **changes}
    path = folder / f"platform-{key}-{len(changes)}.json"
    path.write_text(json.dumps(values))
    return path


def send(course: Path, platform: Path, *labs: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.lti_ags",
                           "--platform", str(platform), "--course", str(course), *labs],
                          capture_output=True, text=True, timeout=120)


def received(base: str) -> dict:
    return requests.get(f"{base}/received", timeout=10).json()


def test_each_lab_becomes_a_line_item_and_each_submission_a_score(course, platform):  # noqa: F811
    base, folder = platform
    done = send(course, platform_file(folder, base), "lab8", "lab12")
    assert done.returncode == 0, done.stderr
    got = received(base)
    assert {(i["resourceId"], i["scoreMaximum"]) for i in got["line_items"]} == {("lab8", 10), ("lab12", 27)}
    lab = {i["id"]: i["resourceId"] for i in got["line_items"]}
    scores = {(lab[s["lineItem"]], s["userId"]): (s["scoreGiven"], s["scoreMaximum"]) for s in got["scores"]}
    # ada: 9 of 10, and 23 less a late penalty of 2 of 27; bo: Lab 8 only; cy: nothing
    assert scores == {("lab8", "1001"): (9, 10), ("lab12", "1001"): (21, 27), ("lab8", "1002"): (4, 10)}
    assert all(s["gradingProgress"] == "FullyGraded" for s in got["scores"])
    assert "cy: not sent (nothing submitted)" in done.stdout

    again = send(course, platform_file(folder, base))                # every lab, a second time
    assert again.returncode == 0, again.stderr
    after = received(base)
    assert len(after["line_items"]) == 2                              # updated, not duplicated
    assert len(after["scores"]) == 2 * len(got["scores"])


def test_a_tool_key_the_lms_does_not_know_is_refused(course, platform):  # noqa: F811
    base, folder = platform
    before = len(received(base)["scores"])
    done = send(course, platform_file(folder, base, key="another-key.pem"), "lab8")
    assert done.returncode != 0
    assert "the LMS refused the access token: HTTP 401" in done.stderr and "invalid_client" in done.stderr
    assert len(received(base)["scores"]) == before


def test_missing_platform_values_are_named(course, platform, tmp_path):  # noqa: F811
    base, folder = platform
    path = platform_file(folder, base, token_url="", lineitems="")
    done = send(course, path, "lab8")
    assert done.returncode != 0 and "need token_url, lineitems" in done.stderr
