-- The semantic lane embeds a memory with the start of the one saved just before it in the same
-- workspace and project (issue #30, docs/decisions.md "Semantic recall"): that memory is found
-- by this index (memory ids are time-ordered), not by walking the project's memories.
CREATE INDEX memories_in_scope_order ON memories(workspace_id, project, memory_id);
