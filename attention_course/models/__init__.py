"""Models of the course: the column encoder and the two digit-string readers of Lab 8."""
from attention_course.models.readers import (  # noqa: F401
    AttentionReader, ColumnEncoder, FixedContextReader, Memory, ReaderConfig, build_reader,
)
