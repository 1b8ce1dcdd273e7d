"""`overspill-query-sandbox`: the process a model's jq filter runs in, bounded in memory and time.

`query_tool_result` starts it for each query (`<this script> query-sandbox`, as the worker starts
`overspill query-sandbox`), writes the query and the spill on its stdin and reads the page on its
stdout; the engine bounds this process's address space first, so a filter that asks for too much
memory ends this process, never the worker that started it.
"""

from overspill._native import serve_query_sandbox


def main() -> None:
    """Serve one query (the argument, `query-sandbox`, names what the parent asks for)."""
    serve_query_sandbox()


if __name__ == '__main__':
    main()
