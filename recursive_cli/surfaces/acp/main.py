"""`recursive acp`: check the extra is there, then serve the client until it goes."""

from __future__ import annotations

import asyncio
import sys

from ...core.errors import CliError
from ...launch.errors import EXIT_USAGE
from ...launch.options import CommonOptions

MISSING = ("`recursive acp` needs the agent-client-protocol package: "
           "pip install 'recursive-cli[acp]' (or pip install agent-client-protocol)")


def acp_command(common: CommonOptions) -> int:
    """Serve ACP on stdio; the exit code (0 when the client closed stdin)."""
    output = getattr(common.output_format, "value", common.output_format)
    if output not in (None, "text"):
        raise CliError(f"`recursive acp` speaks the Agent Client Protocol on stdout; -o {output} does not apply",
                       EXIT_USAGE)
    if common.session_id:
        raise CliError("`recursive acp` opens the sessions its client asks for; --session-id does not apply "
                       "(the client's session/load resumes one)", EXIT_USAGE)
    try:
        import acp  # noqa: F401
    except ImportError:
        raise CliError(MISSING) from None
    from ...launch.errors import end_startup
    from .agent import serve

    end_startup()
    try:
        return asyncio.run(serve(common))
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
