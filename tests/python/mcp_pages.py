"""An MCP server over stdio (no network) for the Google ADK and Strands suites: the tool
`mcp_page`, a page of the crawl log (`support.page_text`). The frameworks' MCP clients start it
as `python mcp_pages.py`."""

from mcp.server.fastmcp import FastMCP
from support import page_text

server = FastMCP('pages')


@server.tool()
def mcp_page(n: int, chars: int) -> str:
    """Fetch page `n` of the crawl log from the MCP server.

    Args:
        n: The page number.
        chars: How many chars of the page to fetch.
    """
    return page_text(n, chars)


if __name__ == '__main__':
    server.run('stdio')
