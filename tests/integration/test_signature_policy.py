"""What the configuration's trust settings mean, through the real binary
(issue 13, PRODUCT.md sections 2 and 4.3):

  * every file the configuration names must exist when the command that
    reads it runs: a missing one is exit 2 with one line naming the key and
    the path, never a silent fallback (a missing trusted_ca_file used to
    turn signature checking into "skipped");
  * a command never fails for a file it does not read (`report` and `check`
    on a machine without the publisher CA);
  * with no trusted_ca_file at all (null), a present signature is still
    judged (structure, image digest, signed attributes, signature value,
    code-signing usage, signer_subject) and any failure rejects (exit 4);
    only its chain is skipped, recorded as signature "skipped" with the
    signer named;
  * signer_subject is compared with the signer's subject decoded from its
    DER to UTF-8 (UTF8String, BMPString, TeletexString as Latin-1...), and
    the manifest and status.json record that text: a pin for "Müller GmbH"
    no longer accepts "Mäller GmbH" (mbedTLS printed both as "M??ller").

Signed files come from tests/fixtures/make_signing_fixtures.sh (openssl,
osslsigncode, mingw-w64, wixl); tests that need them are skipped without
those tools.
"""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from authenticode_fixtures import PROBE, probe as run_probe
from outpost_run import OUTPOST, only_line, outpost, outpost_traced, staged_versions

# The version the fixtures state (make_signing_fixtures.sh); staging under
# another one is a version-binding rejection. Suffixes after a dash are
# build metadata: each names its own staged version, all bind.
V = "26.1.3.24329"

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")


def write_config(root: Path, **sections) -> Path:
    """outpost.json under root with state_dir root/state; sections merged in."""
    doc = {"state_dir": str(root / "state")}
    doc.update(sections)
    path = root / "outpost.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def flipped_code_byte(fx, tmp_path: Path) -> Path:
    """signed.exe with one byte of its code flipped (covered by the digest)."""
    data = bytearray((fx / "signed.exe").read_bytes())
    data[0x400] ^= 0xFF
    path = tmp_path / "flipped.exe"
    path.write_bytes(bytes(data))
    return path


# ---- every named file must exist ------------------------------------------------


@pytest.mark.parametrize("required", [False, True])
def test_missing_trusted_ca_is_a_config_error_not_skipped(tmp_path, fx, required):
    """The issue's case: a missing CA file used to make a tampered, signed
    PE stage with exit 0 and signature "skipped"."""
    missing = tmp_path / "etc" / "publisher-ca.pem"
    cfg = write_config(tmp_path, installer={"verify": {"require_signature": required,
                                                       "trusted_ca_file": str(missing)}})
    r = outpost(cfg, "stage", str(flipped_code_byte(fx, tmp_path)), "--version", V)
    assert r.returncode == 2, r.stderr
    assert only_line(r).startswith(f"outpost: stage: installer.verify.trusted_ca_file: {missing} does not exist")
    assert staged_versions(tmp_path / "state") == []


def test_missing_timestamp_ca_is_a_config_error(tmp_path, fx):
    missing = tmp_path / "ts-ca.pem"
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem"),
                                                       "timestamp_ca_file": str(missing)}})
    r = outpost(cfg, "stage", str(fx / "signed-ts.exe"), "--version", V)
    assert r.returncode == 2, r.stderr
    assert only_line(r).startswith(f"outpost: stage: installer.verify.timestamp_ca_file: {missing} does not exist")
    assert staged_versions(tmp_path / "state") == []


@pytest.mark.sim_options(rate_limit=0)
def test_update_checks_the_ca_before_downloading(tmp_path, sim):
    missing = tmp_path / "publisher-ca.pem"
    cfg = write_config(tmp_path, base_url=sim.url,
                       installer={"installed_version": "1.0",
                                  "verify": {"require_signature": False, "trusted_ca_file": str(missing)}})
    r = outpost(cfg, "update")
    assert r.returncode == 2, r.stderr
    assert only_line(r).startswith(f"outpost: update: installer.verify.trusted_ca_file: {missing} does not exist")
    assert [e for e in sim.log()["requests"] if e["route"] in ("installer", "storage")] == []
    assert staged_versions(tmp_path / "state") == []
    # A configuration error writes nothing (PRODUCT.md section 1): no state
    # directory, no lock, no status.
    assert not (tmp_path / "state").exists()


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_commands_that_do_not_verify_need_no_ca(tmp_path, sim):
    """PRODUCT.md section 2: no CA needed where no installer is fetched. The
    default trusted_ca_file (/etc/outpost/publisher-ca.pem) names a file a
    collector does not have; so does this one."""
    cfg = write_config(tmp_path, base_url=sim.url,
                       installer={"installed_version": "1.0",
                                  "verify": {"trusted_ca_file": str(tmp_path / "publisher-ca.pem"),
                                             "timestamp_ca_file": str(tmp_path / "ts-ca.pem")}})
    r = outpost(cfg, "report")
    assert r.returncode == 0, r.stderr
    r = outpost(cfg, "check")
    assert r.returncode == 10, r.stderr


def test_missing_tls_ca_file_is_a_config_error(tmp_path):
    """It used to be a "TLS failure", exit 1, after a connection attempt."""
    missing = tmp_path / "platform-ca.pem"
    cfg = write_config(tmp_path, base_url="https://127.0.0.1:9", tls={"ca_file": str(missing)},
                       installer={"installed_version": "1.0"})
    for command in ("check", "report"):
        r = outpost(cfg, command)
        assert r.returncode == 2, r.stderr
        assert only_line(r).startswith(f"outpost: {command}: tls.ca_file: {missing} does not exist")


def test_missing_pinned_key_file_is_a_config_error(tmp_path):
    missing = tmp_path / "pin.pem"
    cfg = write_config(tmp_path, base_url="https://127.0.0.1:9", tls={"pinned_public_key": str(missing)},
                       installer={"installed_version": "1.0"})
    r = outpost(cfg, "check")
    assert r.returncode == 2, r.stderr
    assert only_line(r).startswith(f"outpost: check: tls.pinned_public_key: {missing} does not exist")


def test_missing_api_key_file_is_a_config_error(tmp_path):
    missing = tmp_path / "api_key"
    cfg = write_config(tmp_path, base_url="https://127.0.0.1:9", api_key_file=str(missing),
                       installer={"installed_version": "1.0"})
    r = outpost(cfg, "report", key=None)
    assert r.returncode == 2, r.stderr
    assert only_line(r).startswith(f"outpost: report: api_key_file: {missing} does not exist")


@pytest.mark.sim_options(rate_limit=0)
def test_missing_installed_version_file_is_a_config_error(tmp_path, sim):
    """It used to fall through silently to the OS inventory and the state."""
    missing = tmp_path / "sensor-version.txt"
    cfg = write_config(tmp_path, base_url=sim.url, installer={"installed_version_file": str(missing)})
    r = outpost(cfg, "check")
    assert r.returncode == 2, r.stderr
    assert only_line(r).startswith(f"outpost: check: installer.installed_version_file: {missing} does not exist")
    missing.write_text("26.01.03.24329\n")
    r = outpost(cfg, "check")
    assert r.returncode == 0, r.stderr


def test_stage_of_a_missing_file_says_so(tmp_path):
    cfg = write_config(tmp_path, installer={"verify": {"require_signature": False, "trusted_ca_file": None}})
    r = outpost(cfg, "stage", str(tmp_path / "nothere.exe"), "--version", V)
    assert r.returncode == 2, r.stderr
    assert only_line(r) == f"outpost: stage: cannot stage {tmp_path / 'nothere.exe'}: it does not exist"


# ---- no trust anchor: everything but the chain -----------------------------------


def no_ca_agent(tmp_path, **verify):
    return write_config(tmp_path, installer={"verify": {"require_signature": False, "trusted_ca_file": None,
                                                        **verify}})


def flip_in_file(src: Path, dst: Path, needle: bytes):
    data = bytearray(src.read_bytes())
    pos = bytes(data).find(needle)
    assert pos > 0
    data[pos] ^= 0x20
    dst.write_bytes(bytes(data))
    return dst


def signature_value_flipped(fx, tmp_path, name):
    """name with the last byte of its signer's signature value flipped."""
    der = tmp_path / (name + ".p7")
    subprocess.run(["osslsigncode", "extract-signature", "-in", str(fx / name), "-out", str(der)],
                   check=True, capture_output=True, timeout=60)
    tail = der.read_bytes()[-48:]
    data = bytearray((fx / name).read_bytes())
    pos = bytes(data).find(tail)
    assert pos > 0
    data[pos + len(tail) - 1] ^= 0x01
    out = tmp_path / ("sigflip-" + name)
    out.write_bytes(bytes(data))
    return out


def test_without_ca_a_digest_mismatch_is_rejected(tmp_path, fx):
    cfg = no_ca_agent(tmp_path)
    cases = [
        (flipped_code_byte(fx, tmp_path), "digest-mismatch"),
        (flip_in_file(fx / "signed.msi", tmp_path / "flipped.msi", b"Outpost Fixture"), "digest-mismatch"),
        (signature_value_flipped(fx, tmp_path, "signed.exe"), "bad-signature"),
        (fx / "noeku.exe", "not valid for code signing"),
    ]
    for path, why in cases:
        r = outpost(cfg, "stage", str(path), "--version", V)
        assert r.returncode == 4, (path.name, r.stderr)
        assert why in only_line(r), path.name
    assert staged_versions(tmp_path / "state") == []


def test_without_ca_a_good_signature_is_recorded_as_chain_skipped(tmp_path, fx):
    cfg = no_ca_agent(tmp_path)
    # other-ca.exe chains to a root nobody configured: without a CA that is
    # not judged, exactly as the README says.
    for version, name in ((V + "-a", "signed.exe"), (V + "-b", "signed.msi"), (V + "-c", "other-ca.exe")):
        r = outpost(cfg, "--json", "stage", str(fx / name), "--version", version)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["signature"] == "skipped" and out["signer"], out
        signature = json.loads((tmp_path / "state" / "staging" / version / "manifest.json").read_text())[
            "verification"]["signature"]
        assert signature["result"] == "skipped" and signature["digest"] == "sha256"
        assert signature["signer"] == out["signer"]
    staged = json.loads((tmp_path / "state" / "status.json").read_text())["installer"]["staged"]
    assert staged["signature"] == "skipped" and staged["signer"] == "C=US, O=Elsewhere, CN=Other Code Signing"


def test_without_ca_unsigned_is_unsigned_and_signer_subject_still_applies(tmp_path, fx):
    cfg = no_ca_agent(tmp_path, signer_subject="Someone Else")
    r = outpost(cfg, "--json", "stage", str(fx / "unsigned.exe"), "--version", V)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["signature"] == "unsigned"
    r = outpost(cfg, "stage", str(fx / "signed.exe"), "--version", V + "-b")
    assert r.returncode == 4, r.stderr
    assert "wrong-signer" in only_line(r)
    cfg = no_ca_agent(tmp_path, require_signature=True)
    r = outpost(cfg, "stage", str(fx / "signed.exe"), "--version", V + "-b")
    assert r.returncode == 2, r.stderr
    assert "trusted_ca_file is not set" in only_line(r)


# ---- signer_subject against the DER subject ------------------------------------

# name -> (subject, openssl string_mask: how the non-ASCII attributes are encoded)
UNICODE_SIGNERS = {
    "mueller-utf8": ("/C=DE/O=Müller GmbH/CN=Müller GmbH", "utf8only"),   # UTF8String
    "mueller-bmp": ("/C=DE/O=Müller GmbH/CN=Müller GmbH", "pkix"),        # BMPString
    "mueller-t61": ("/C=DE/O=Müller GmbH/CN=Müller GmbH", "default"),     # TeletexString (Latin-1)
    "maeller-utf8": ("/C=DE/O=Mäller GmbH/CN=Mäller GmbH", "utf8only"),
}
MUELLER = "C=DE, O=Müller GmbH, CN=Müller GmbH"


@pytest.fixture(scope="module")
def unicode_signed(fx):
    """signed copies of app64.exe by code-signing leaves (under the fixtures'
    intermediate CA) whose O and CN are non-ASCII, made with openssl -utf8."""
    made = {}
    for name, (subject, mask) in UNICODE_SIGNERS.items():
        cnf = fx / f"{name}-req.cnf"
        cnf.write_text(f"[req]\ndistinguished_name = dn\nstring_mask = {mask}\n[dn]\n")
        run = lambda *a: subprocess.run(list(a), check=True, capture_output=True, cwd=fx, timeout=60)  # noqa: E731
        run("openssl", "genrsa", "-out", f"{name}.key", "2048")
        run("openssl", "req", "-new", "-utf8", "-config", str(cnf), "-key", f"{name}.key", "-subj", subject,
            "-out", f"{name}.csr")
        run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "inter.pem", "-CAkey", "inter.key",
            "-CAcreateserial", "-days", "3650", "-sha256", "-extfile", "ext.cnf", "-extensions", "codesign",
            "-out", f"{name}.pem")
        (fx / f"{name}-chain.pem").write_bytes((fx / f"{name}.pem").read_bytes() + (fx / "inter.pem").read_bytes())
        run("osslsigncode", "sign", "-certs", f"{name}-chain.pem", "-key", f"{name}.key", "-h", "sha256",
            "-n", "Outpost Fixture", "-in", "app64.exe", "-out", f"{name}.exe")
        # The signatures are good: osslsigncode agrees.
        run("osslsigncode", "verify", "-CAfile", "root.pem", "-in", f"{name}.exe")
        made[name] = fx / f"{name}.exe"
    return made


def probe(fx, path, subject=None):
    if not PROBE:
        pytest.skip("OUTPOST_AUTHENTICODE_PROBE is not set (tests/CMakeLists.txt sets it)")
    return run_probe(path, fx / "root.pem", subject=subject, exits=(0,))


def test_signer_is_shown_decoded_from_the_der(fx, unicode_signed):
    for name in ("mueller-utf8", "mueller-bmp", "mueller-t61"):
        got = probe(fx, unicode_signed[name])
        assert got["verdict"] == "valid" and got["signer"] == MUELLER, (name, got)
    assert probe(fx, unicode_signed["maeller-utf8"])["signer"] == "C=DE, O=Mäller GmbH, CN=Mäller GmbH"


@pytest.mark.parametrize("pin", [MUELLER, "Müller GmbH"])
def test_pin_accepts_the_signer_in_every_string_type(fx, unicode_signed, pin):
    for name in ("mueller-utf8", "mueller-bmp", "mueller-t61"):
        got = probe(fx, unicode_signed[name], subject=pin)
        assert got["verdict"] == "valid", (name, got)


@pytest.mark.parametrize("pin", [MUELLER, "Müller GmbH",
                                 # what mbedtls_x509_dn_gets printed for both, so what an
                                 # administrator copied from the manifest before
                                 "C=DE, O=M??ller GmbH, CN=M??ller GmbH", "M??ller GmbH"])
def test_pin_for_mueller_rejects_maeller(fx, unicode_signed, pin):
    got = probe(fx, unicode_signed["maeller-utf8"], subject=pin)
    assert got["verdict"] == "wrong-signer", got
    assert "Mäller GmbH" in got["reason"]
    if "?" in pin:
        assert probe(fx, unicode_signed["mueller-utf8"], subject=pin)["verdict"] == "wrong-signer"


def test_stage_records_the_faithful_signer(tmp_path, fx, unicode_signed):
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem"),
                                                       "signer_subject": "Müller GmbH"}})
    r = outpost(cfg, "--json", "stage", str(unicode_signed["mueller-bmp"]), "--version", V)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["signer"] == MUELLER
    manifest = json.loads((tmp_path / "state" / "staging" / V / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["verification"]["signature"] == {**manifest["verification"]["signature"],
                                                    "result": "valid", "signer": MUELLER}
    status = json.loads((tmp_path / "state" / "status.json").read_text(encoding="utf-8"))
    assert status["installer"]["staged"]["signer"] == MUELLER
    r = outpost(cfg, "stage", str(unicode_signed["maeller-utf8"]), "--version", V + "-b")
    assert r.returncode == 4, r.stderr
    assert 'signed by "C=DE, O=Mäller GmbH, CN=Mäller GmbH", not "Müller GmbH"' in only_line(r)
    assert staged_versions(tmp_path / "state") == [V]


# ---- issue 23: every signature, pins, CRLs, "system", one pass -------------------

def stage_json(cfg, path, version=V):
    r = outpost(cfg, "--json", "stage", str(path), "--version", version)
    return r, (json.loads(r.stdout) if r.returncode == 0 else None)


def manifest_signature(tmp_path, version=V):
    m = json.loads((tmp_path / "state" / "staging" / version / "manifest.json").read_text(encoding="utf-8"))
    return m["verification"]["signature"]


def test_dual_signed_stages_through_its_sha256_signature(tmp_path, fx):
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem")}})
    r, _ = stage_json(cfg, fx / "dual-sha1-sha256.exe")
    assert r.returncode == 0, r.stderr
    sig = manifest_signature(tmp_path)
    assert sig["result"] == "valid" and sig["digest"] == "sha256"
    assert sig["signature_index"] == 2 and sig["signature_count"] == 2
    status = json.loads((tmp_path / "state" / "status.json").read_text(encoding="utf-8"))
    carried = status["installer"]["staged"]["verified_signature"]
    assert carried["signature_index"] == 2 and carried["digest"] == "sha256"
    assert carried["signer_cert_sha256"] == sig["signer_cert_sha256"]


def test_timestamp_is_recorded(tmp_path, fx):
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem"),
                                                       "timestamp_ca_file": str(fx / "ts-root.pem")}})
    r, _ = stage_json(cfg, fx / "signed-ts.exe")
    assert r.returncode == 0, r.stderr
    sig = manifest_signature(tmp_path)
    assert sig["timestamp_kind"] == "rfc3161" and sig["timestamp"].endswith("Z")


def test_signer_sha256_pin_in_the_configuration(tmp_path, fx):
    cert = probe(fx, fx / "signed.exe")["cert_sha256"]
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem"),
                                                       "signer_sha256": ["0" * 64]}})
    r, _ = stage_json(cfg, fx / "signed.exe")
    assert r.returncode == 4 and cert in only_line(r) and "signer_sha256" in only_line(r)
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem"),
                                                       "signer_sha256": ["0" * 64, cert.upper()]}})
    r, _ = stage_json(cfg, fx / "signed.exe")
    assert r.returncode == 0, r.stderr


def test_signer_sha256_must_be_a_hash(tmp_path, fx):
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem"),
                                                       "signer_sha256": ["Example Code Signing"]}})
    r, _ = stage_json(cfg, fx / "signed.exe")
    assert r.returncode == 2 and "installer.verify.signer_sha256[0]" in only_line(r)


def test_crl_files_reject_a_revoked_signer(tmp_path, fx):
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem"),
                                                       "crl_files": [str(fx / "crl-leaf-before.pem")]}})
    r, _ = stage_json(cfg, fx / "signed.exe")
    assert r.returncode == 4, r.stderr
    assert "(revoked)" in only_line(r) and "Example Code Signing" in only_line(r)
    missing = tmp_path / "missing.crl"
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem"),
                                                       "crl_files": [str(missing)]}})
    r, _ = stage_json(cfg, fx / "signed.exe")
    assert r.returncode == 2 and f"installer.verify.crl_files: {missing} does not exist" in only_line(r)


def test_system_trust_store(tmp_path, fx):
    # The test PKI's root is not in the system store: an untrusted chain,
    # not a missing file.
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": "system"}})
    r, _ = stage_json(cfg, fx / "signed.exe")
    assert r.returncode == 4, r.stderr
    assert "untrusted-chain" in only_line(r)
    # SSL_CERT_FILE names the bundle "system" means on POSIX.
    env_cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": "system"}})
    r = outpost(env_cfg, "stage", str(fx / "signed.exe"), "--version", V,
                env_extra={"SSL_CERT_FILE": str(fx / "root.pem")})
    assert r.returncode == 0, r.stderr


def read_bytes_by_file(trace: list[str]):
    """Bytes returned by read/pread64 per file path, from `strace -y`."""
    out = {}
    for line in trace:
        m = re.search(r"\b(?:read|pread64)\(\d+<([^>]*)>,.*\)\s+=\s+(\d+)", line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + int(m.group(2))
    return out


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (scripts/setup installs it)")
def test_stage_reads_a_signed_pe_once(tmp_path, fx):
    """`stage FILE` reads the file once for its SHA-256 and its Authenticode
    digest: the source is read once (while copying), the staged copy only
    for its headers, signature and version resource."""
    big = tmp_path / "big-unsigned.exe"
    big.write_bytes((fx / "app64.exe").read_bytes() + bytes(16 << 20))
    signed = tmp_path / "big.exe"
    subprocess.run(["osslsigncode", "sign", "-certs", str(fx / "leaf-chain.pem"), "-key", str(fx / "leaf.key"),
                    "-h", "sha256", "-in", str(big), "-out", str(signed)], check=True, capture_output=True,
                   timeout=120)
    size = signed.stat().st_size
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem")}})
    r, trace = outpost_traced(cfg, "stage", str(signed), "--version", V, syscalls="read,pread64",
                              trace=tmp_path / "strace.log", timeout=300)
    assert r.returncode == 0, r.stderr
    by_file = read_bytes_by_file(trace)
    source = sum(n for p, n in by_file.items() if p.endswith("/big.exe"))
    staged = sum(n for p, n in by_file.items() if "/staging/" in p)
    assert source == size, by_file
    # The copy: headers, the certificate table, the version resource; not
    # the 16 MiB image (which an Authenticode digest of the copy would read).
    assert staged < 1 << 20, by_file


def test_unreadable_certificates_are_named_at_v_and_in_the_rejection(tmp_path, fx):
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "ca-with-unreadable.pem")}})
    r = outpost(cfg, "-v", "stage", str(fx / "signed.exe"), "--version", V)
    assert r.returncode == 0, r.stderr
    assert "Weird Root CA" in r.stderr and "cannot be read" in r.stderr
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "ca-only-unreadable.pem")}})
    r = outpost(cfg, "stage", str(fx / "signed.exe"), "--version", V + "-b")
    assert r.returncode == 2, r.stderr
    assert "Weird Root CA" in only_line(r) and "ca-only-unreadable.pem" in only_line(r)
    cfg = write_config(tmp_path, installer={"verify": {"trusted_ca_file": str(fx / "root.pem")}})
    r = outpost(cfg, "stage", str(fx / "bad.exe"), "--version", V + "-c")
    assert r.returncode == 4, r.stderr
    assert "Outpost Test Unreadable CA" in only_line(r) and "cannot be read" in only_line(r)


def big_signed_pe(fx, tmp_path, mib=16):
    """A signed PE of about mib MiB (the fixture's image with an overlay),
    stating the simulator's default version."""
    big = tmp_path / "big-unsigned.exe"
    big.write_bytes((fx / "app64.exe").read_bytes() + bytes(mib << 20))
    signed = tmp_path / "big.exe"
    subprocess.run(["osslsigncode", "sign", "-certs", str(fx / "leaf-chain.pem"), "-key", str(fx / "leaf.key"),
                    "-h", "sha256", "-in", str(big), "-out", str(signed)], check=True, capture_output=True,
                   timeout=120)
    return signed


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (scripts/setup installs it)")
def test_update_reads_a_signed_pe_no_more_than_an_unsigned_one(tmp_path, fx, sim_factory):
    """PRODUCT.md 4.3: the Authenticode digest is computed while the file
    streams in, so after the download nothing reads the image again: only
    its headers, signature and version resource."""
    signed = big_signed_pe(fx, tmp_path)
    sim = sim_factory(installer=str(signed))
    cfg = write_config(tmp_path, base_url=sim.url,
                       installer={"installed_version": "1.0",
                                  "verify": {"trusted_ca_file": str(fx / "root.pem")}})
    r, trace = outpost_traced(cfg, "update", syscalls="read,pread64", trace=tmp_path / "strace.log", timeout=600)
    assert r.returncode == 0, r.stderr
    assert manifest_signature(tmp_path, "26.01.03.24329-0de7ab+")["result"] == "valid"
    by_file = read_bytes_by_file(trace)
    state = sum(n for p, n in by_file.items() if str(tmp_path / "state") in p and not p.endswith(".json"))
    assert state < 1 << 20, by_file
