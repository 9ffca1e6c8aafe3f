"""The core a student reads: attention, masks, scores, multi-head attention, positions,
the Transformer block, sparse attention and the numbers that describe a pattern.

Depends on PyTorch alone, never on the rest of ``course_utils``.
"""
