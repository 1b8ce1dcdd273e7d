"""OverspillMasking without Temporal: 12 tool outputs of about 20,000 chars, older ones masked once the
messages pass 50,000 chars; the model then reads the first page back by its handle."""

import re

from overspill.pydantic_ai import OverspillMasking, OverspillStore
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness.tool_output_limits import ToolOutputLimits


def report_page(n: int) -> str:
    """The tool: page `n` of a report, about 20,000 chars."""
    return f'page {n}: total={n * 1_000}\n' + ''.join(f'row {i} of page {n}\n' for i in range(1_200))[:19_980]


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for an LLM: reads 12 pages, then reads page 0's first line back, and answers."""
    seen = [p for m in messages for p in m.parts if p.part_kind == 'tool-return']
    if len(seen) < 12:
        return ModelResponse(parts=[ToolCallPart('report_page', {'n': len(seen)}, tool_call_id=f'page-{len(seen)}')])
    if seen[-1].tool_name == 'report_page':
        handle = re.search(r"stored to handle '([^']+)'", seen[0].model_response_str())[1]
        return ModelResponse(parts=[ToolCallPart('read_tool_result', {'handle': handle, 'limit': 1})])
    return ModelResponse(parts=[TextPart(f'{seen[0].model_response_str()}\n{seen[-1].model_response_str()}')])


store = OverspillStore()  # outside Temporal, writes go straight to the store (default: a local directory)
agent = Agent(
    FunctionModel(model),
    tools=[report_page],
    capabilities=[
        ToolOutputLimits(bands=[], store=store),  # no spill band: only read_tool_result
        ProcessHistory(OverspillMasking(store, budget=50_000, keep_recent=2, read_tools=('read_tool_result',))),
    ],
)

if __name__ == '__main__':
    print(agent.run_sync('Sum up the report.').output)
