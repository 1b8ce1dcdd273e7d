"""AWS Signature V4 for plain-HTTP S3 requests, standard library only.

`deploy/seaweedfs.sh` creates its bucket and checks that its server is ready with it, and
`benches/seaweedfs_floor.py` signs its requests with it.

    python deploy/sigv4.py ready ENDPOINT BUCKET ACCESS_KEY SECRET_KEY
    # creates BUCKET unless it exists; exit 0 when a signed `GET /BUCKET?list-type=2` answers 200
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import sys
import urllib.error
import urllib.parse
import urllib.request

UNSIGNED = 'UNSIGNED-PAYLOAD'


def signed(method: str, host: str, path: str, query: str, headers: dict[str, str],
           access_key: str, secret_key: str, region: str = 'us-east-1') -> dict[str, str]:
    """`headers` (lowercased) with `host`, the date, an unsigned payload and the Authorization
    header for `method path?query` at `host`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = now.strftime('%Y%m%dT%H%M%SZ'), now.strftime('%Y%m%d')
    headers = {k.lower(): v for k, v in headers.items()}
    headers |= {'host': host, 'x-amz-date': amz_date, 'x-amz-content-sha256': UNSIGNED}
    names = sorted(headers)
    canonical_query = '&'.join(
        f'{urllib.parse.quote(k, safe="")}={urllib.parse.quote(v, safe="")}'
        for k, v in sorted(urllib.parse.parse_qsl(query, keep_blank_values=True))
    )
    canonical = '\n'.join([
        method, path, canonical_query, ''.join(f'{k}:{headers[k]}\n' for k in names),
        ';'.join(names), UNSIGNED,
    ])
    scope = f'{day}/{region}/s3/aws4_request'
    to_sign = f'AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}'
    key = f'AWS4{secret_key}'.encode()
    for part in (day, region, 's3', 'aws4_request'):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers['authorization'] = (
        f'AWS4-HMAC-SHA256 Credential={access_key}/{scope}, '
        f'SignedHeaders={";".join(names)}, Signature={signature}'
    )
    return headers


def answers(method: str, endpoint: str, bucket: str, query: str, access_key: str, secret_key: str,
            ok: tuple[int, ...] = (200,)) -> bool:
    """Whether a signed `method /bucket?query` at `endpoint` answers one of `ok` within 2 s."""
    host = endpoint.split('://', 1)[1]
    headers = signed(method, host, f'/{bucket}', query, {}, access_key, secret_key)
    url = f'{endpoint}/{bucket}' + (f'?{query}' if query else '')
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status in ok
    except urllib.error.HTTPError as error:
        return error.code in ok
    except OSError:
        return False


def ready(endpoint: str, bucket: str, access_key: str, secret_key: str) -> bool:
    """Create `bucket` unless it exists (409 says it does), then whether a signed ListObjectsV2
    of it answers 200."""
    return (answers('PUT', endpoint, bucket, '', access_key, secret_key, ok=(200, 409))
            and answers('GET', endpoint, bucket, 'list-type=2', access_key, secret_key))


if __name__ == '__main__':
    if len(sys.argv) != 6 or sys.argv[1] != 'ready':
        sys.exit(__doc__)
    sys.exit(0 if ready(*sys.argv[2:6]) else 1)
