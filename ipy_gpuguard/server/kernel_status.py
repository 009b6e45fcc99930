"""Keep the kernel's busy indicator true while a cell runs, with ipykernel 7's subshells.

JupyterLab and Notebook 7 show a kernel's execution state from its ``status`` messages, except
those answering a request whose type the server lists as untracked (``debug_request``,
``comm_info_request``, the other requests of the control channel): the page reads the list from
jupyter_server's ``untracked_message_types``. ipykernel 7 answers subshell requests on the control
channel too, and the widget manager sends them as a widget is shown (a guarded cell's live panel,
or any widget updated from a thread); their ``idle`` made the indicator say Idle for the rest of
a cell that still ran. jupyter_server's list lacks them, though its own help asks for "a superset
of the message types sent on any channel other than the shell channel": they are added here.
"""

from __future__ import annotations

from typing import Any

#: The subshell requests and replies of the kernel protocol (JEP 91), sent on the control channel.
SUBSHELL_MESSAGE_TYPES = (
    "create_subshell_request",
    "create_subshell_reply",
    "delete_subshell_request",
    "delete_subshell_reply",
    "list_subshell_request",
    "list_subshell_reply",
)


def untrack_subshell_messages(serverapp: Any) -> None:
    """Add the subshell messages to the server's untracked message types, and to the list the
    page is given when the lab's server extension has copied it already."""
    manager = serverapp.kernel_manager
    untracked = getattr(manager, "untracked_message_types", None)
    if untracked is None:  # a kernel manager of another kind: nothing to mend
        return
    missing = [kind for kind in SUBSHELL_MESSAGE_TYPES if kind not in untracked]
    manager.untracked_message_types = [*untracked, *missing]
    page_config = serverapp.web_app.settings.get("page_config_data", {})
    if "untracked_message_types" in page_config:
        page_config["untracked_message_types"] = list(manager.untracked_message_types)
