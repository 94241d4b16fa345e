"""Authenticode verification (issue 9): outpost's verdicts against
osslsigncode's, case by case, for PE images and MSI packages.

The fixtures (test PKI, PE and MSI files, signed copies) are made by
tests/fixtures/make_signing_fixtures.sh into a temporary directory; the
variants (flipped bytes, appended data, truncated tables) are made here.
outpost is driven through tests/fixtures/authenticode_probe (env
OUTPOST_AUTHENTICODE_PROBE), which prints one JSON line per file.

Where outpost and osslsigncode legitimately differ, the case says so and
asserts the documented difference:
  * SHA-1 signatures: osslsigncode accepts them, outpost's policy refuses
    them unless allow_sha1.
  * nested signatures: both judge every signature and accept a file one
    of them carries. A nested signature whose digest does not match the
    file (dual-broken.exe): osslsigncode 2.9 prints MISMATCH and still
    exits 0 through the other one; outpost rejects the file (PRODUCT.md
    4.3: a broken signature rejects whatever the others say).
  * revocation: osslsigncode is run with the same CRL (-CRLfile); outpost
    accepts a signature timestamped before the revocation date, as Windows
    does (osslsigncode judges the CRL at the verification time).
  * signer_subject: osslsigncode has no such policy.
  * MSI with data appended after the compound file: osslsigncode ignores
    the extra bytes, outpost refuses them (not covered by the signature).
    So too when the FAT marks the appended sectors as used, or the mini
    stream is grown over them (the GlueBall / CVE-2020-1464 pattern):
    osslsigncode accepts, outpost accounts for every sector and refuses.
"""
import struct
import subprocess

import pytest

from authenticode_fixtures import PROBE, needs_signing_tools, probe as run_probe
from outpost_run import OUTPOST, outpost
from outpost_config import write_config

pytestmark = [
    pytest.mark.skipif(not PROBE, reason="OUTPOST_AUTHENTICODE_PROBE is not set (tests/CMakeLists.txt sets it)"),
    needs_signing_tools,
]

DAY = 86400


def now_of(fx):
    return int((fx / "now.txt").read_text().strip())


def probe(fx, path, now=None, ca="root.pem", ts_ca="ts-root.pem", crls=(), **policy):
    """The probe's verdict with the fixtures' files named by name, at the fixtures' time unless now."""
    return run_probe(path, fx / ca, ts_ca=fx / ts_ca if ts_ca else None, now=now if now is not None else now_of(fx),
                     crls=[fx / crl for crl in crls], **policy)


def ossl_ok(fx, path, now=None, ca="root.pem", ts_ca="ts-root.pem"):
    """Whether `osslsigncode verify` accepts the file at the same time."""
    cmd = ["osslsigncode", "verify", "-CAfile", str(fx / ca), "-time", str(now if now is not None else now_of(fx))]
    if ts_ca:
        cmd += ["-TSA-CAfile", str(fx / ts_ca)]
    cmd += ["-in", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return r.returncode == 0


def agree(fx, path, verdict, ossl, **kw):
    """Asserts outpost's verdict and osslsigncode's acceptance."""
    got = probe(fx, path, **kw)
    assert got.get("verdict") == verdict, got
    ossl_kw = {k: v for k, v in kw.items() if k in ("now", "ca", "ts_ca")}
    assert ossl_ok(fx, path, **ossl_kw) == ossl, f"osslsigncode disagrees on {path.name}"
    return got


# ---- helpers that make variants ------------------------------------------------

def pe_security_entry(data):
    """File offset of the security directory entry of a PE image."""
    nt = struct.unpack_from("<I", data, 0x3C)[0]
    opt = nt + 24
    magic = struct.unpack_from("<H", data, opt)[0]
    return opt + (128 if magic == 0x10B else 144)


def variant(fx, name, new_name, mutate):
    data = bytearray((fx / name).read_bytes())
    mutate(data)
    path = fx / new_name
    path.write_bytes(bytes(data))
    return path


def signature_der(fx, name):
    der = fx / (name + ".p7")
    subprocess.run(["osslsigncode", "extract-signature", "-in", str(fx / name), "-out", str(der)],
                   check=True, capture_output=True, timeout=60)
    return der.read_bytes()


def flip_in_signature_value(fx, name):
    """Flips the last byte of the signer's signature value (the end of an
    untimestamped PKCS#7 blob), wherever the container put it."""
    der = signature_der(fx, name)
    tail = der[-48:]

    def mutate(data):
        pos = bytes(data).find(tail)
        assert pos > 0
        data[pos + len(tail) - 1] ^= 0x01
    return variant(fx, name, "sigflip-" + name, mutate)


# ---- cases shared by PE and MSI ------------------------------------------------

@pytest.fixture(params=["exe", "msi"])
def ext(request):
    return request.param


def test_valid_sha256(fx, ext):
    got = agree(fx, fx / f"signed.{ext}", "valid", True)
    assert got["signer"] == "C=US, O=Example, CN=Example Code Signing"
    assert got["digest"] == "sha256" and got["timestamped"] is False
    assert got["format"] == ("pe" if ext == "exe" else "msi")


def test_valid_timestamped(fx, ext):
    got = agree(fx, fx / f"signed-ts.{ext}", "valid", True)
    assert got["timestamped"] is True and got["timestamp"] == now_of(fx)


def test_valid_ecdsa(fx, ext):
    agree(fx, fx / f"ecdsa.{ext}", "valid", True)


def test_flipped_content_byte(fx, ext):
    if ext == "exe":
        path = variant(fx, "signed.exe", "flip-signed.exe", lambda d: d.__setitem__(0x400, d[0x400] ^ 0xFF))
    else:
        # The summary information stream holds the product name in clear.
        def mutate(d):
            pos = bytes(d).find(b"Outpost Fixture")
            assert pos > 0
            d[pos] ^= 0x20
        path = variant(fx, "signed.msi", "flip-signed.msi", mutate)
    agree(fx, path, "digest-mismatch", False)


def test_flipped_signature_byte(fx, ext):
    got = agree(fx, flip_in_signature_value(fx, f"signed.{ext}"), "bad-signature", False)
    assert "signature value" in got["reason"]


def test_expired_leaf_valid_at_timestamp(fx, ext):
    later = now_of(fx) + 30 * DAY
    got = agree(fx, fx / f"short-ts.{ext}", "valid", True, now=later)
    assert got["timestamped"] is True


def test_expired_leaf_without_timestamp(fx, ext):
    later = now_of(fx) + 30 * DAY
    got = agree(fx, fx / f"short-nots.{ext}", "untrusted-chain", False, now=later)
    assert "expired" in got["reason"]


def test_expired_leaf_valid_at_legacy_countersignature(fx, ext):
    later = now_of(fx) + 30 * DAY
    got = agree(fx, fx / f"short-legacy.{ext}", "valid", True, now=later)
    assert got["timestamped"] is True and abs(got["timestamp"] - now_of(fx)) < 600
    got = agree(fx, fx / f"short-legacy.{ext}", "untrusted-chain", False, now=later, ts_ca="other-root.pem")
    assert "countersignature" in got["reason"]


def test_timestamp_from_untrusted_tsa_is_ignored(fx, ext):
    later = now_of(fx) + 30 * DAY
    got = agree(fx, fx / f"short-ts.{ext}", "untrusted-chain", False, now=later, ts_ca="other-root.pem")
    assert "timestamp ignored" in got["reason"] and got["timestamped"] is False


def test_other_ca(fx, ext):
    agree(fx, fx / f"other-ca.{ext}", "untrusted-chain", False)


def test_leaf_without_code_signing_usage(fx, ext):
    got = agree(fx, fx / f"noeku.{ext}", "untrusted-chain", False)
    assert "code signing" in got["reason"]


def test_wrong_signer_subject(fx, ext):
    # Documented difference: osslsigncode has no signer policy.
    got = agree(fx, fx / f"signed.{ext}", "wrong-signer", True, subject="Someone Else")
    assert "Example Code Signing" in got["reason"]
    assert probe(fx, fx / f"signed.{ext}", subject="Example Code Signing")["verdict"] == "valid"
    assert probe(fx, fx / f"signed.{ext}",
                 subject="C=US, O=Example, CN=Example Code Signing")["verdict"] == "valid"


def test_unsigned(fx, ext):
    agree(fx, fx / f"unsigned.{ext}", "unsigned", False)


def test_sha1_refused_unless_allowed(fx, ext):
    # Documented difference: osslsigncode accepts SHA-1; outpost only with allow_sha1.
    agree(fx, fx / f"sha1.{ext}", "unsupported", True)
    assert probe(fx, fx / f"sha1.{ext}", allow_sha1=True)["verdict"] == "valid"


def test_nested_signature(fx, ext):
    # The primary signature passes; the nested one (from a CA the policy
    # does not trust) is outside the policy, which does not reject the file.
    # osslsigncode 2.9 prints an error for it but exits 0 too.
    agree(fx, fx / f"nested.{ext}", "valid", True)
    bundle = fx / "both-roots.pem"
    bundle.write_bytes((fx / "root.pem").read_bytes() + (fx / "other-root.pem").read_bytes())
    agree(fx, fx / f"nested.{ext}", "valid", True, ca="both-roots.pem")


def test_data_appended(fx, ext):
    path = variant(fx, f"signed.{ext}", f"appended-signed.{ext}", lambda d: d.extend(b"\0" * 512))
    got = probe(fx, path)
    assert got["verdict"] == "malformed", got
    # PE: both refuse (MS12-024). MSI: osslsigncode ignores trailing bytes
    # (documented difference), outpost refuses them.
    assert ossl_ok(fx, path) == (ext == "msi")


def test_truncated_file(fx, ext):
    path = variant(fx, f"signed.{ext}", f"truncated-signed.{ext}", lambda d: d.__delitem__(slice(len(d) - 700, None)))
    agree(fx, path, "malformed", False)


# ---- PE-only cases ---------------------------------------------------------------

def test_pe32(fx):
    agree(fx, fx / "signed32.exe", "valid", True)


def test_pe_certificate_table_past_end(fx):
    def mutate(d):
        entry = pe_security_entry(d)
        offset, size = struct.unpack_from("<II", d, entry)
        struct.pack_into("<II", d, entry, offset, size + 4096)
    got = agree(fx, variant(fx, "signed.exe", "pastend-signed.exe", mutate), "malformed", False)
    assert "past the end" in got["reason"]


def test_pe_truncated_certificate_table(fx):
    # Table cut in the middle of the PKCS#7 blob, directory and entry
    # lengths adjusted so that the table still ends the file.
    def mutate(d):
        entry = pe_security_entry(d)
        offset, size = struct.unpack_from("<II", d, entry)
        keep = (size // 2) & ~7
        del d[offset + keep:]
        struct.pack_into("<II", d, entry, offset, keep)
        struct.pack_into("<I", d, offset, keep)
    agree(fx, variant(fx, "signed.exe", "truncsig-signed.exe", mutate), "malformed", False)


def test_pe_second_certificate_entry(fx):
    # An extra WIN_CERTIFICATE after the signed one is not covered by it.
    def mutate(d):
        entry = pe_security_entry(d)
        offset, size = struct.unpack_from("<II", d, entry)
        d.extend(struct.pack("<IHH", 16, 0x0200, 0x0002) + b"payload!")
        struct.pack_into("<II", d, entry, offset, size + 16)
    got = probe(fx, variant(fx, "signed.exe", "twoentries-signed.exe", mutate))
    assert got["verdict"] == "malformed", got


def test_pe_checksum_is_not_signed(fx):
    # The CheckSum field is excluded from the digest: changing it keeps the
    # signature valid (for both tools).
    def mutate(d):
        nt = struct.unpack_from("<I", d, 0x3C)[0]
        struct.pack_into("<I", d, nt + 24 + 64, 0x12345678)
    agree(fx, variant(fx, "signed.exe", "checksum-signed.exe", mutate), "valid", True)


# ---- every signature is judged (issue 23) -------------------------------------

def test_dual_sha1_sha256_passes_through_the_sha256_signature(fx, ext):
    got = agree(fx, fx / f"dual-sha1-sha256.{ext}", "valid", True)
    assert got["digest"] == "sha256" and got["signature_index"] == 2 and got["signature_count"] == 2


def test_dual_untrusted_primary_trusted_nested(fx, ext):
    got = agree(fx, fx / f"dual-other-leaf.{ext}", "valid", True)
    assert got["signature_index"] == 2 and got["signer"] == "C=US, O=Example, CN=Example Code Signing"


def test_dual_sha1_and_untrusted_sha256_is_refused(fx, ext):
    # Documented difference: osslsigncode accepts the SHA-1 primary.
    got = agree(fx, fx / f"dual-sha1-other.{ext}", "untrusted-chain", True)
    assert got["reason"].startswith("signature 2 of 2 (sha256): ")
    assert probe(fx, fx / f"dual-sha1-other.{ext}", allow_sha1=True)["verdict"] == "valid"


def test_dual_with_broken_nested_signature_is_rejected(fx):
    # Documented difference: osslsigncode exits 0 through the SHA-1 one.
    got = agree(fx, fx / "dual-broken.exe", "digest-mismatch", True, allow_sha1=True)
    assert got["signature_index"] == 2 and "signature 2 of 2" in got["reason"]


def test_signer_sha256_pins(fx, ext):
    cert = probe(fx, fx / f"signed.{ext}")["cert_sha256"]
    other = "0" * 64
    assert probe(fx, fx / f"signed.{ext}", pins=[other, cert])["verdict"] == "valid"
    got = probe(fx, fx / f"signed.{ext}", pins=[other])
    assert got["verdict"] == "wrong-signer" and cert in got["reason"]
    # A pin chooses among the signatures of a dual-signed file too.
    nested = probe(fx, fx / f"dual-other-leaf.{ext}")["cert_sha256"]
    assert probe(fx, fx / f"dual-other-leaf.{ext}", pins=[nested])["verdict"] == "valid"


# ---- certificates Mbed TLS cannot parse -------------------------------------------

def test_critical_certificate_policies_are_read(fx):
    got = agree(fx, fx / "pol.exe", "valid", True)
    assert got["notes"] == ""


def test_unreadable_certificate_in_the_signature_is_named(fx):
    got = agree(fx, fx / "bad.exe", "untrusted-chain", False)
    assert "Outpost Test Unreadable CA" in got["reason"] and "cannot be read" in got["reason"]
    assert "-0x" in got["reason"]


def test_ca_file_with_an_unreadable_certificate(fx):
    got = probe(fx, fx / "signed.exe", ca="ca-with-unreadable.pem")
    assert got["verdict"] == "valid"
    assert "Weird Root CA" in got["notes"] and "certificate 1 of trusted CA file" in got["notes"]
    out = run_probe(fx / "signed.exe", fx / "ca-only-unreadable.pem", now=now_of(fx), exits=(1,))
    assert out["code"] == "CONFIG" and "Weird Root CA" in out["error"] and "ca-only-unreadable.pem" in out["error"]


# ---- revocation, offline ----------------------------------------------------------

def ossl_crl_ok(fx, path, crl, now):
    cmd = ["osslsigncode", "verify", "-CAfile", str(fx / "root.pem"), "-TSA-CAfile", str(fx / "ts-root.pem"),
           "-CRLfile", str(fx / crl), "-time", str(now), "-in", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60).returncode == 0


@pytest.mark.parametrize("crl", ["crl-leaf-before.pem", "crl-leaf-after.pem", "crl-inter.pem"])
def test_revoked_without_timestamp(fx, ext, crl):
    later = now_of(fx) + 3 * DAY
    got = probe(fx, fx / f"signed.{ext}", now=later, crls=[crl])
    assert got["verdict"] == "revoked", got
    assert "was revoked on" in got["reason"] and "no trusted timestamp" in got["reason"]
    assert not ossl_crl_ok(fx, fx / f"signed.{ext}", crl, later)


def test_revoked_before_the_timestamp(fx, ext):
    got = probe(fx, fx / f"signed-ts.{ext}", now=now_of(fx) + 3 * DAY, crls=["crl-leaf-before.pem"])
    assert got["verdict"] == "revoked" and "Example Code Signing" in got["reason"]
    assert "before the signature's timestamp" in got["reason"]


@pytest.mark.parametrize("crl", ["crl-leaf-after.pem", "crl-inter.pem"])
def test_revoked_after_the_timestamp_stands(fx, ext, crl):
    got = probe(fx, fx / f"signed-ts.{ext}", now=now_of(fx) + 3 * DAY, crls=[crl])
    assert got["verdict"] == "valid" and got["timestamped"] is True


def test_crl_in_der_revoking_nothing(fx, ext):
    assert probe(fx, fx / f"signed.{ext}", crls=["crl-none.der"])["verdict"] == "valid"
    assert ossl_crl_ok(fx, fx / f"signed.{ext}", "crl-none.pem", now_of(fx))


def test_unreadable_crl_file_is_a_config_error(fx):
    out = run_probe(fx / "signed.exe", fx / "root.pem", crls=[fx / "root.pem"], exits=(1,))
    assert out["code"] == "CONFIG" and "root.pem" in out["error"] and "CRL" in out["error"]


# ---- MSI-only cases --------------------------------------------------------------

def test_msi_with_msidigitalsignatureex(fx):
    agree(fx, fx / "signed-dse.msi", "valid", True)


def dir_entry_changed(fx, name, new_name):
    """name with the modification time of its first stream entry that is
    not a signature changed: metadata only MsiDigitalSignatureEx covers."""
    def mutate(d):
        cfb = Cfb(d)
        first = cfb.root_entry()
        for i in range(1, cfb.ss // 128):
            e = first + 128 * i
            name_len = struct.unpack_from("<H", d, e + 64)[0]
            raw = bytes(d[e:e + name_len])
            if d[e + 66] == 2 and not raw.startswith(b"\x05\x00"):
                d[e + 0x6C] ^= 0x01
                return
        raise AssertionError("no stream entry to change")
    return variant(fx, name, new_name, mutate)


def test_msi_metadata_changed_after_signing(fx):
    # With MsiDigitalSignatureEx the metadata is signed: refused by both.
    agree(fx, dir_entry_changed(fx, "signed-dse.msi", "dse-meta.msi"), "digest-mismatch", False)
    # Without it, the metadata is not covered: accepted by both.
    agree(fx, dir_entry_changed(fx, "signed.msi", "nodse-meta.msi"), "valid", True)


# ---- MSI: every sector accounted for (GlueBall, CVE-2020-1464) -------------------

FREESECT, ENDOFCHAIN, FATSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD


class Cfb:
    """Just enough of a compound file's layout to patch one as an attacker
    would (the fixtures' FAT fits in the header's 109 slots)."""

    def __init__(self, data):
        self.d = data
        self.ss = 1 << struct.unpack_from("<H", data, 0x1E)[0]

    def offset(self, sector):
        return (sector + 1) * self.ss

    def fat_offset(self, sector):
        per = self.ss // 4
        fat_sector = struct.unpack_from("<I", self.d, 0x4C + 4 * (sector // per))[0]
        return self.offset(fat_sector) + 4 * (sector % per)

    def fat(self, sector):
        return struct.unpack_from("<I", self.d, self.fat_offset(sector))[0]

    def set_fat(self, sector, value):
        struct.pack_into("<I", self.d, self.fat_offset(sector), value)

    def root_entry(self):
        return self.offset(struct.unpack_from("<I", self.d, 0x30)[0])

    def append(self, payload):
        """Appends one sector holding payload; returns its number."""
        self.d.extend(payload.ljust(self.ss, b"\0"))
        return len(self.d) // self.ss - 2


# A ZIP end-of-central-directory record: what a JAR polyglot puts last.
PAYLOAD = b"PK\x05\x06" + bytes(18) + b"not covered by the signature"


def appended_marked_used(d):
    cfb = Cfb(d)
    cfb.set_fat(cfb.append(PAYLOAD), ENDOFCHAIN)


def mini_stream_grown(d):
    """The root entry's mini stream container takes the appended sector, its
    mini sectors left free in the mini FAT."""
    cfb = Cfb(d)
    root = cfb.root_entry()
    start, size = struct.unpack_from("<IQ", d, root + 0x74)
    last = start
    while cfb.fat(last) != ENDOFCHAIN:
        last = cfb.fat(last)
    new = cfb.append(PAYLOAD)
    cfb.set_fat(last, new)
    cfb.set_fat(new, ENDOFCHAIN)
    struct.pack_into("<Q", d, root + 0x78, size + cfb.ss)
    minifat = cfb.offset(struct.unpack_from("<I", d, 0x3C)[0])
    for m in range(size // 64, (size + cfb.ss) // 64):
        struct.pack_into("<I", d, minifat + 4 * m, FREESECT)


def outpost_stage(fx, tmp_path, path, version):
    """`outpost stage` with the fixtures' root trusted; None without OUTPOST_BIN."""
    if not OUTPOST:
        return None
    cfg, _ = write_config(tmp_path, installer={"verify": {"require_signature": True,
                                                          "trusted_ca_file": str(fx / "root.pem")}})
    return outpost(cfg, "stage", path, "--version", version, key=None, timeout=60)


@pytest.mark.parametrize("change, reason", [
    (appended_marked_used, "is marked in use but no stream or table reaches it"),
    (mini_stream_grown, "mini stream ends in unused space"),
])
def test_msi_appended_sectors_are_accounted_for(fx, tmp_path, change, reason):
    # Documented difference: osslsigncode only hashes the streams and
    # accepts; outpost refuses a sector the signature does not cover.
    path = variant(fx, "signed.msi", change.__name__ + "-signed.msi", change)
    got = probe(fx, path)
    assert got["verdict"] == "malformed" and reason in got["reason"], got
    assert ossl_ok(fx, path)
    # 26.1.3.24329: the fixture's ProductVersion (version binding).
    staged = outpost_stage(fx, tmp_path, path, "26.1.3.24329")
    if staged is not None:
        assert staged.returncode == 4, staged.stderr
        assert reason in staged.stderr
        assert outpost_stage(fx, tmp_path, fx / "signed.msi", "26.1.3.24329").returncode == 0


def test_msi_free_sector_inside_is_accepted(fx):
    # Windows' writers leave freed sectors inside compound files (only a
    # copy compacts one): a free sector in the middle is not refused. Here
    # the FAT's own sector moves to the end, leaving its old place free.
    def mutate(d):
        cfb = Cfb(d)
        old = struct.unpack_from("<I", d, 0x4C)[0]
        new = cfb.append(bytes(d[cfb.offset(old):cfb.offset(old) + cfb.ss]))
        struct.pack_into("<I", d, 0x4C, new)
        cfb.set_fat(old, FREESECT)
        cfb.set_fat(new, FATSECT)
    agree(fx, variant(fx, "signed.msi", "freesector-signed.msi", mutate), "valid", True)


# ---- configuration errors --------------------------------------------------------

def test_unreadable_ca_file_is_a_config_error(fx):
    out = run_probe(fx / "signed.exe", fx / "missing.pem", exits=(1,))
    assert out["code"] == "CONFIG" and "missing.pem" in out["error"]


def test_not_an_installer(fx):
    path = fx / "plain.txt"
    path.write_text("hello, this is not a PE or an MSI\n")
    assert probe(fx, path)["verdict"] == "unsupported"
