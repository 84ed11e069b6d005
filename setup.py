"""The optional C fast paths of proto_json and storage (the
rest is in pyproject.toml).

`optional=True`: where no C compiler is found the build goes on without it, and
proto_json converts everything with its pure-Python modules, to the same output.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "proto_json._fastpath",
            ["proto_json/_fastpath.c"],
            depends=[
                "proto_json/_jsonbuf.h",
                "proto_json/_jsonscan.h",
                "proto_json/_native_bytes.h",
                "proto_json/_otlp_bytes.h",
            ],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "storage._rows",
            ["storage/_rows.c"],
            depends=[
                "proto_json/_jsonbuf.h",
                "proto_json/_jsonscan.h",
                "storage/_rows_genai.h",
                "storage/_rows_json.h",
                "storage/_rows_tokens.h",
            ],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "storage._llm_text",
            ["storage/_llm_text.c"],
            depends=["proto_json/_jsonbuf.h", "proto_json/_jsonscan.h"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "storage._words",
            ["storage/_words.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "storage._sqlite_bulk",
            ["storage/_sqlite_bulk.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
