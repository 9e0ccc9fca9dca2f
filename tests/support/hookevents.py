"""What a harness (or anyone) may send a tool-call hook, as hypothesis strategies: the
tool call's JSON, well formed or not."""

from __future__ import annotations

from hypothesis import strategies as st

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20)
tool_names = st.sampled_from(["Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch",
                              "write_file", "replace", "Bash", "Delete", "Read"]) | st.text()
paths = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40) | \
    st.sampled_from(["src/a.py", "/etc/passwd", "../x", "~/x", "", ".", "a\0b",
                     "projects/web/status/status.v0001.md"])
events = st.fixed_dictionaries(
    {"tool_name": tool_names,
     "tool_input": st.fixed_dictionaries({}, optional={
         "file_path": paths | json_values, "notebook_path": paths,
         "command": st.text() | st.builds(
             lambda ps: "*** Begin Patch\n" + "".join(f"*** Update File: {p}\n" for p in ps)
             + "*** End Patch", st.lists(paths, max_size=3)) | json_values}) | json_values},
    optional={"cwd": paths | json_values, "workspace_roots": json_values,
              "hook_event_name": st.text() | json_values,
              "tool_response": json_values})
