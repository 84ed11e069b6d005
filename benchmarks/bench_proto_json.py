"""proto_json conversion cost as a ratio to orjson.loads of the same bytes, in one run.

    python -m benchmarks.bench_proto_json [--spans 1000] [--seconds 6]

Target: converting a body (parse included) costs at most 5x parsing it alone,
for a native /v1/spans body and an OTLP/JSON body. The ratio is the median over paired,
interleaved rounds (see benchmarks/timing.py); spans/s are the best rounds.
"""

from __future__ import annotations

import argparse

import orjson

import proto_json
from benchmarks.payloads import native_spans_body, otlp_body
from benchmarks.timing import paired_ratio

TARGET = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=6.0, help="per body format")
    args = parser.parse_args()
    cases = [
        ("native /v1/spans", native_spans_body(args.spans), proto_json.convert_spans),
        ("OTLP/JSON", otlp_body(args.spans), proto_json.convert_otlp),
    ]
    print(f"{args.spans} spans per body, {args.seconds:.0f} s per format")
    worst = 0.0
    for label, body, convert in cases:
        ratio, parse, full = paired_ratio(
            lambda body=body: orjson.loads(body),
            lambda body=body, convert=convert: convert(body).payload,
            args.seconds,
        )
        worst = max(worst, ratio)
        print(
            f"{label:17s} {len(body) / 1024:5.0f} KiB"
            f"  orjson.loads {args.spans / parse:10,.0f} spans/s"
            f"  convert {args.spans / full:9,.0f} spans/s"
            f"  cost ratio {ratio:5.2f}x (target <= {TARGET:g})"
        )
    print(f"worst cost ratio {worst:.2f}x: {'PASS' if worst <= TARGET else 'FAIL'}")


if __name__ == "__main__":
    main()
