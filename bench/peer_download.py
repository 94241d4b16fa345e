#!/usr/bin/env python3
"""The Python peer of `outpost update` in scripts/bench: what an administrator
would write in the language of the API document's example — get a token,
stream the installer with requests, hash it with hashlib as it arrives, write
it to a file. No resume, no verification beyond the hash, no fsync (as
curl -o does not either).

    peer_download.py BASE_URL OUT_FILE [CA_FILE]     prints "<sha256>  OUT_FILE"
The API key comes from OUTPOST_API_KEY (never from argv).
"""
import hashlib
import os
import sys

import requests

CHUNK = 1024 * 1024


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    base, out = sys.argv[1].rstrip("/"), sys.argv[2]
    verify = sys.argv[3] if len(sys.argv) == 4 else True
    with requests.Session() as session:
        # verify on each call: requests lets REQUESTS_CA_BUNDLE override session.verify
        token = session.post(f"{base}/v2/auth/token/access", verify=verify,
                             json={"refresh_token": os.environ.get("OUTPOST_API_KEY", "")}, timeout=30)
        token.raise_for_status()
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        digest = hashlib.sha256()
        with session.get(f"{base}/v2/installer/windows/latest", headers=headers, stream=True,
                         verify=verify, timeout=30) as reply:
            reply.raise_for_status()
            with open(out, "wb") as f:
                for chunk in reply.iter_content(CHUNK):
                    digest.update(chunk)
                    f.write(chunk)
    print(f"{digest.hexdigest()}  {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
