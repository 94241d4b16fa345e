#!/usr/bin/env python3
"""Writes tests/unit/sha256_vectors.inc, the SHA-256 test vectors of
test_sha256accel.c (run once; the .inc is committed, fixed):

  short   the 65 messages of a CAVS 21.3 "SHA-256 ShortMsg" response file
          (0 to 64 bytes), digests checked against hashlib here;
  long    CAVS LongMsg lengths (163 + 99 k bytes, k = 0..63) with message
          bytes from the xorshift32 generator of xorshift.py (test_sha256accel.c has
          the same), digests from hashlib; plus FIPS 180-2's one million 'a';
  monte   the CAVS Monte Carlo algorithm (MD0 = MD1 = MD2 = seed;
          MDi = SHA(MDi-3 || MDi-2 || MDi-1) for i = 3..1002; 100
          checkpoints, each the next seed), digests from hashlib.

    tests/unit/sha256_vectors.py SHORT.rsp > tests/unit/sha256_vectors.inc
"""
import hashlib
import sys

from xorshift import xorshift_bytes


def xorshift_message(length: int) -> bytes:
    return xorshift_bytes(length, length)


MONTE_SEED = "6d1e72ad03ddeb5de891e572e2396f8da015d899ef0e79503152d6010a3fe691"


def main() -> None:
    short = []
    msg = None
    for line in open(sys.argv[1]):
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if key == "Msg":
            msg = value
        elif key == "MD":
            if hashlib.sha256(bytes.fromhex(msg)).hexdigest() != value:
                raise SystemExit(f"hashlib disagrees with the response file on {msg}")
            short.append((msg, value))
    print("/* sha256_vectors.inc — written by sha256_vectors.py; do not edit. */")
    print("static const struct { const char *msg; const char *md; } short_msgs[] = {")
    for m, d in short:
        print(f'    {{"{m}", "{d}"}},')
    print("};")
    print("static const struct { size_t len; const char *md; } long_msgs[] = {")
    for k in range(64):
        n = 163 + 99 * k
        print(f'    {{{n}, "{hashlib.sha256(xorshift_message(n)).hexdigest()}"}},')
    print("};")
    print(f'static const char million_a_md[] = "{hashlib.sha256(b"a" * 1000000).hexdigest()}";')
    print(f'static const char monte_seed[] = "{MONTE_SEED}";')
    print("static const char *const monte_checkpoints[] = {")
    seed = bytes.fromhex(MONTE_SEED)
    for _ in range(100):
        md = [seed, seed, seed]
        for _ in range(3, 1003):
            md.append(hashlib.sha256(md[-3] + md[-2] + md[-1]).digest())
            md.pop(0)
        seed = md[-1]
        print(f'    "{seed.hex()}",')
    print("};")


main()
