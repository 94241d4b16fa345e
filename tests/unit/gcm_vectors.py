#!/usr/bin/env python3
"""Writes tests/unit/gcm_vectors.inc, the AES-GCM test vectors of
test_gcmaccel.c (run once; the .inc is committed, fixed):

  nist    from NIST CAVP's gcmEncryptExtIV and gcmDecrypt response files as
          Mbed TLS 2.28 ships them (tests/suites/test_suite_gcm.aes*_{en,de}
          .data in its source): for each key size and each of the four
          plaintext/AAD length pairs (0 or 128 bytes each, 128-bit IV), the
          first vector with a 128-bit tag and the first with a 32-bit one,
          and from the decryption files the first with a forged tag (FAIL);
  lengths 96-bit IVs (what TLS uses) and lengths that are no multiple of 16
          (text 0 to 300 bytes, AAD 0, 13, 20), key, IV and text from
          the xorshift32 generator of xorshift.py, ciphertext and tag from OpenSSL
          (python3-cryptography's AESGCM);
  ivs     every IV length from 1 to 128 bytes (GCM hashes any IV but 96 bits
          into its first counter block, so each length takes that path
          differently), text and AAD of lengths that are no multiple of 16,
          ciphertext and tag from OpenSSL's libcrypto itself (its EVP
          interface through ctypes: python3-cryptography refuses IVs under
          8 bytes, OpenSSL does not).

    tests/unit/gcm_vectors.py MBEDTLS_SOURCE_DIR > tests/unit/gcm_vectors.inc
"""
import ctypes
import ctypes.util
import functools
import re
import sys
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from xorshift import xorshift_bytes


def c_string(data: bytes) -> str:
    return '"' + "".join(f"\\x{b:02x}" for b in data) + '"'


def row(key, iv, aad, pt, ct, tag, ok):
    return (f"    {{{len(key) * 8}, {c_string(key)}, {len(iv)}, {c_string(iv)}, {len(aad)}, {c_string(aad)},\n"
            f"     {len(pt)}, {c_string(pt)}, {c_string(ct)}, {len(tag)}, {c_string(tag)}, {1 if ok else 0}}},")


def nist(src: Path):
    rows = []
    for bits in (128, 192, 256):
        seen = set()
        enc = (src / f"tests/suites/test_suite_gcm.aes{bits}_en.data").read_text()
        for m in re.finditer(r'^gcm_encrypt_and_tag:MBEDTLS_CIPHER_ID_AES:"(\w*)":"(\w*)":"(\w*)":"(\w*)":"(\w*)"'
                             r':(\d+):"(\w*)":0$', enc, re.M):
            key, pt, iv, aad, ct, tag_bits, tag = m.groups()
            kind = (len(pt), len(aad), int(tag_bits) in (128, 32) and int(tag_bits))
            if not kind[2] or kind in seen:
                continue
            seen.add(kind)
            rows.append(row(*(bytes.fromhex(v) for v in (key, iv, aad, pt, ct, tag)), True))
        dec = (src / f"tests/suites/test_suite_gcm.aes{bits}_de.data").read_text()
        fails = 0
        for m in re.finditer(r'^gcm_decrypt_and_verify:MBEDTLS_CIPHER_ID_AES:"(\w*)":"(\w*)":"(\w*)":"(\w*)"'
                             r':(\d+):"(\w*)":"FAIL":"":0$', dec, re.M):
            key, ct, iv, aad, _tag_bits, tag = m.groups()
            rows.append(row(*(bytes.fromhex(v) for v in (key, iv, aad)), b"", bytes.fromhex(ct),
                            bytes.fromhex(tag), False))
            fails += 1
            if fails == 2:
                break
    return rows


def lengths():
    rows = []
    n = 0
    for bits in (128, 256):
        for text_len in (0, 1, 15, 16, 17, 51, 60, 127, 128, 129, 143, 300):
            for aad_len in (0, 13, 20):
                n += 1
                key = xorshift_bytes(3 * n, bits // 8)
                iv = xorshift_bytes(3 * n + 1, 12)
                aad = xorshift_bytes(3 * n + 2, aad_len) if aad_len else b""
                pt = xorshift_bytes(100000 + n, text_len)
                sealed = AESGCM(key).encrypt(iv, pt, aad)
                rows.append(row(key, iv, aad, pt, sealed[:-16], sealed[-16:], True))
    return rows


@functools.lru_cache(maxsize=None)
def libcrypto() -> ctypes.CDLL:
    """OpenSSL's libcrypto with the EVP calls the IV vectors use declared (once)."""
    lib = ctypes.CDLL(ctypes.util.find_library("crypto") or "libcrypto.so.3")
    lib.EVP_CIPHER_CTX_new.restype = ctypes.c_void_p
    lib.EVP_get_cipherbyname.restype = ctypes.c_void_p
    lib.EVP_get_cipherbyname.argtypes = [ctypes.c_char_p]
    for f in ("EVP_EncryptInit_ex", "EVP_EncryptUpdate", "EVP_EncryptFinal_ex", "EVP_CIPHER_CTX_ctrl",
              "EVP_CIPHER_CTX_free"):
        getattr(lib, f).restype = ctypes.c_int
    lib.EVP_EncryptInit_ex.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                       ctypes.c_char_p]
    lib.EVP_EncryptUpdate.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                      ctypes.c_char_p, ctypes.c_int]
    lib.EVP_EncryptFinal_ex.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    lib.EVP_CIPHER_CTX_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.EVP_CIPHER_CTX_free.argtypes = [ctypes.c_void_p]
    return lib


def openssl_gcm_seal(key: bytes, iv: bytes, aad: bytes, pt: bytes) -> bytes:
    """AES-GCM encryption by OpenSSL's libcrypto (EVP): ciphertext || 16-byte tag."""
    lib = libcrypto()
    EVP_CTRL_GCM_SET_IVLEN, EVP_CTRL_GCM_GET_TAG = 0x9, 0x10
    ctx = lib.EVP_CIPHER_CTX_new()
    cipher = lib.EVP_get_cipherbyname(f"aes-{len(key) * 8}-gcm".encode())
    assert ctx and cipher
    try:
        n = ctypes.c_int(0)
        out = ctypes.create_string_buffer(len(pt) + 16)
        tag = ctypes.create_string_buffer(16)
        assert lib.EVP_EncryptInit_ex(ctx, cipher, None, None, None) == 1
        assert lib.EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, len(iv), None) == 1
        assert lib.EVP_EncryptInit_ex(ctx, None, None, key, iv) == 1
        if aad:
            assert lib.EVP_EncryptUpdate(ctx, None, ctypes.byref(n), aad, len(aad)) == 1
        assert lib.EVP_EncryptUpdate(ctx, out, ctypes.byref(n), pt, len(pt)) == 1 and n.value == len(pt)
        assert lib.EVP_EncryptFinal_ex(ctx, ctypes.cast(ctypes.addressof(out) + len(pt), ctypes.c_char_p),
                                       ctypes.byref(n)) == 1 and n.value == 0
        assert lib.EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1
        return out.raw[:len(pt)] + tag.raw
    finally:
        lib.EVP_CIPHER_CTX_free(ctx)


def ivs():
    rows = []
    for iv_len in range(1, 129):
        bits = (128, 192, 256)[iv_len % 3]
        text_len = (iv_len * 37) % 97  # 0 to 96: partial blocks, one block, several
        aad_len = (iv_len * 11) % 29
        key = xorshift_bytes(200000 + 3 * iv_len, bits // 8)
        iv = xorshift_bytes(200001 + 3 * iv_len, iv_len)
        aad = xorshift_bytes(200002 + 3 * iv_len, aad_len) if aad_len else b""
        pt = xorshift_bytes(300000 + iv_len, text_len)
        sealed = openssl_gcm_seal(key, iv, aad, pt)
        if iv_len >= 8:  # where python3-cryptography takes it, the two agree
            assert sealed == AESGCM(key).encrypt(iv, pt, aad)
        rows.append(row(key, iv, aad, pt, sealed[:-16], sealed[-16:], True))
    return rows


def main():
    src = Path(sys.argv[1])
    print("/* Generated by tests/unit/gcm_vectors.py: do not edit. */")
    print("/* {key_bits, key, iv_len, iv, aad_len, aad, text_len, plaintext (empty for a FAIL vector),")
    print(" *  ciphertext, tag_len, tag, valid} */")
    print("static const struct gcm_vector NIST_VECTORS[] = {")
    print("\n".join(nist(src)))
    print("};")
    print("static const struct gcm_vector LENGTH_VECTORS[] = {")
    print("\n".join(lengths()))
    print("};")
    print("static const struct gcm_vector IV_VECTORS[] = {")
    print("\n".join(ivs()))
    print("};")


if __name__ == "__main__":
    main()
