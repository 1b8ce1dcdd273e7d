"""Overspill for Python: keep AI agents' oversized tool outputs out of their context windows, durably.

The engine is the Rust one the Overspill worker runs (`overspill._native`), so Python reduces,
spills and pages tool outputs exactly as the worker does. Integrations:

- `overspill.pydantic_ai`: pydantic-ai agents (`ToolOutputLimits` stores, read-back tools, masking).
"""
