"""What the library shows never carries a secret, and bytes that are not UTF-8 never break it
(media/text.h: every message passes through printable()).

Secrets are planted where a user's would be: a presigned URL's query (X-Amz-Signature,
X-Amz-Security-Token, X-Amz-Credential), a password in a URL and in AWS_ENDPOINT_URL, the
S3 secret key and session token. Shards are read from nginx and moto (which checks signatures),
both on 127.0.0.1 (tests/media/object_store_servers.py; skipped, saying why, without them), with
errors under on_error "raise" and "skip", and by hdl-bench; every exception, warning, log record,
stats() and everything written to stdout and stderr (the C++ side's too) is searched for the
planted strings. A shard whose member names are Latin-1 bytes raises DataError (not
UnicodeDecodeError) naming the key escaped, and stats() still works under "skip"."""

import io
import logging
import os
import pathlib
import signal
import subprocess
import sys
import tarfile
import time
import warnings

import pytest

from habana_dataloader import DataError, Pipeline, fn, write_shards
from habana_dataloader import _C

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLANTED = ["PlAnTeDsIgNaTuRe", "PlAnTeDtOkEn", "PlAnTeDcReDeNtIaL", "PlAnTeDpAsSwOrD", "PlAnTeDeNdPoInTpW"]
PRESIGNED = ("?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2FPlAnTeDcReDeNtIaL&X-Amz-Signature=PlAnTeDsIgNaTuRe"
             "&X-Amz-Security-Token=PlAnTeDtOkEn")


@pytest.fixture(scope="module")
def served(tmp_path_factory, request):
    val_root = request.getfixturevalue("val_root")
    out = tmp_path_factory.mktemp("secrets")
    write_shards(str(val_root), str(out / "root" / "val-%03d.tar"), maxcount=100)
    # A shard whose members' names are Latin-1 bytes, its JPEG corrupt.
    with tarfile.open(out / "root" / "latin.tar", "w", format=tarfile.GNU_FORMAT, encoding="latin-1") as tar:
        for name, data in [("k\xe9y.jpg", b"\xff\xd8\xff\xe0 not a JPEG"), ("k\xe9y.cls", b"3")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    state = out / "state"
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests/media/object_store_servers.py"), "--root",
                             str(out / "root"), "--state", str(state), "--want", "nginx,moto", "--fail-rate", "0",
                             "--parent", str(os.getpid()), "--lifetime", "600"])
    info = {}
    for _ in range(1200):
        if (state / "servers.txt").exists():
            info = dict(line.split("=", 1) for line in (state / "servers.txt").read_text().split() if "=" in line)
            break
        time.sleep(0.1)
    missing = [n for n in ("nginx", "moto") if n not in info]
    if missing:
        proc.send_signal(signal.SIGTERM)
        pytest.skip("; ".join(info.get("skip_" + n, n + " did not start") for n in missing))
    PLANTED.extend([info["moto_secret"], info["moto_session_secret"], info["moto_session_token"]])
    yield info, out
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)


def reader(urls, on_error, decode=False):
    pipe = Pipeline(batch_size=4, num_threads=2, on_error=on_error, output="numpy")
    with pipe:
        data, label, _ = fn.webdataset_reader(urls=urls, field="jpg;jpeg", label_field="cls", index="none")
        pipe.set_outputs(fn.image_decoder(data, resize=[8, 8]) if decode else data, label)
    return pipe


def shown(pipe_factory, urls):
    """Everything a user sees of reading `urls` under raise and skip: the exception, stats()."""
    texts = []
    with pytest.raises(Exception) as e:
        for _ in pipe_factory(urls, "raise"):
            pass
    texts.append(f"{type(e.value).__name__}: {e.value}")
    skip = pipe_factory(urls, "skip")
    try:
        for _ in skip:
            pass
    except Exception as err:  # a skip budget spent, or nothing readable: shown too
        texts.append(f"{type(err).__name__}: {err}")
    texts.append(repr(skip.stats()))
    return texts, e.value


def assert_no_secret(texts):
    for t in texts:
        for secret in PLANTED:
            assert secret not in t, f"{secret!r} shown in: {t[:2000]}"


def test_no_planted_secret_is_shown(served, monkeypatch, capfd, caplog, tmp_path):
    info, out = served
    caplog.set_level(logging.DEBUG)
    nginx = f"http://user:PlAnTeDpAsSwOrD@127.0.0.1:{info['nginx']}"
    texts = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # A presigned-style query and a password on an HTTP shard that is not there, and one that is.
        t, err = shown(reader, [f"{nginx}/nope.tar{PRESIGNED}", f"{nginx}/val-000.tar{PRESIGNED}"])
        texts += t
        assert "nope.tar" in str(err) and "REDACTED" in str(err), str(err)
        # S3 with temporary credentials (token) through an endpoint with a password.
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://key:PlAnTeDeNdPoInTpW@127.0.0.1:{info['moto']}")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", info["moto_session_key"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", info["moto_session_secret"])
        monkeypatch.setenv("AWS_SESSION_TOKEN", info["moto_session_token"])
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        t, err = shown(reader, ["s3://hdl/nope.tar"])
        texts += t
        assert "nope.tar" in str(err), str(err)
        # hdl-bench: its report and its errors.
        bench = ROOT / "build" / "bin" / "hdl-bench"
        if bench.exists():
            for data, extra in [(f"{nginx}/val-000.tar{PRESIGNED}", []), (f"{nginx}/nope.tar{PRESIGNED}", []),
                                ("s3://hdl/val-000.tar", ["--json"]), ("s3://hdl/nope.tar", ["--skip-errors"])]:
                r = subprocess.run([str(bench), "decode", data, "--iterations", "2", "--batch-size", "4", *extra],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
                texts += [r.stdout, r.stderr]
                assert r.stdout or r.stderr
    texts += [str(w.message) for w in caught]
    texts += [r.getMessage() for r in caplog.records]
    cap = capfd.readouterr()
    texts += [cap.out, cap.err]
    assert_no_secret(texts)


def test_bytes_that_are_not_utf8_are_escaped_not_an_error(served):
    info, out = served
    for urls in [[str(out / "root" / "latin.tar")], [f"http://127.0.0.1:{info['nginx']}/latin.tar"]]:
        with pytest.raises(DataError) as e:
            for _ in reader(urls, "raise", decode=True):
                pass
        assert "k\\xe9y" in str(e.value) and "latin.tar" in str(e.value), str(e.value)
        skip = reader(urls + [str(out / "root" / "val-000.tar")], "skip", decode=True)
        next(iter(skip))
        stats = skip.stats()  # once raised UnicodeDecodeError for good
        assert any("k\\xe9y" in m for m in stats["recent_errors"]), stats["recent_errors"]
        skip.close()


def test_printable_is_bound():
    assert _C.printable("k\xe9y") == "k\xe9y"  # a str is UTF-8 already
    assert _C.printable("s3://b/k?X-Amz-Signature=abc") == "s3://b/k?X-Amz-Signature=REDACTED"
