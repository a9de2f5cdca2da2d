"""Where a `# kvlint: connector-path` marker counts (kvlint/binding/markers.py): on a `def`'s header only. Written
anywhere else it marks nothing, and KVC101 says so; a comment that quotes it, or a string, is no marker."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kvlint.config import Config
from kvlint.binding.markers import misplaced_markers
from kvlint.running.runner import run

RUNNER = textwrap.dedent('''\
    import functools

    from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


    # kvlint: connector-path
    def idle_step(scheduler_output):
        return EMPTY_MODEL_RUNNER_OUTPUT


    @functools.lru_cache  # kvlint: connector-path[ec]
    def cached_step():
        return EMPTY_MODEL_RUNNER_OUTPUT


    def no_forward(scheduler_output):  # kvlint: connector-path
        return EMPTY_MODEL_RUNNER_OUTPUT


    def pipeline_step(
        scheduler_output,  # kvlint: connector-path[ec]
    ):
        return EMPTY_MODEL_RUNNER_OUTPUT


    def drain(
        scheduler_output,
    ):  # kvlint: connector-path  # noqa: E501
        return EMPTY_MODEL_RUNNER_OUTPUT


    async def async_step():  # kvlint: connector-path
        return EMPTY_MODEL_RUNNER_OUTPUT


    def one_liner(): return EMPTY_MODEL_RUNNER_OUTPUT  # kvlint: connector-path


    def in_the_body():
        # kvlint: connector-path
        return EMPTY_MODEL_RUNNER_OUTPUT


    def quoted():
        # to put a function on the path, end its def line with `# kvlint: connector-path`
        marker = "# kvlint: connector-path"
        """
        # kvlint: connector-path
        """
        return marker


    class StepRunner:  # kvlint: connector-path[kv]
        async def step(self):
            async with self.lock:  # kvlint: connector-path
                return EMPTY_MODEL_RUNNER_OUTPUT
''')


def test_only_markers_off_every_def_header_are_found() -> None:
    assert list(misplaced_markers(RUNNER)) == [
        (6, 0, 24, "# kvlint: connector-path"),
        (11, 22, 50, "# kvlint: connector-path[ec]"),
        (40, 4, 28, "# kvlint: connector-path"),  # in a body; the one in the docstring (48) is text
        (53, 19, 47, "# kvlint: connector-path[kv]"),  # a class line
        (55, 31, 55, "# kvlint: connector-path"),  # `async with`, not `async def`
    ]


def test_a_file_without_the_marker_is_not_tokenized() -> None:
    assert list(misplaced_markers("def step(:\n")) == []  # not even valid: never read


def test_misplaced_markers_are_kvc101_and_mark_nothing(project: Path) -> None:
    (project / "runner.py").write_text(RUNNER, encoding="utf-8")
    findings = run([Path(".")], Config(root=project), jobs=1).findings
    assert [(f.line, f.code, f.invariant) for f in findings] == [
        (6, "KVC101", ""),
        (11, "KVC101", ""),
        (17, "KVC002", "kv"),  # `no_forward`: marked on its def line
        (23, "KVC002", "ec"),  # `pipeline_step`: a comment inside the signature is on the header
        (29, "KVC002", "kv"),  # `drain`: so is one on the `):` line
        (33, "KVC002", "kv"),  # `async def`
        (36, "KVC002", "kv"),  # the one-line def
        (40, "KVC101", ""),
        (53, "KVC101", ""),
        (55, "KVC101", ""),
    ]
    assert findings[0].message == (
        "`# kvlint: connector-path` is not on a `def` line, so it marks nothing: put it on the line of the `def` "
        "(or of the `):` that ends its signature)"
    )


# A `def` line's comment marks the function only when one of its `#` directives is the marker and nothing else: a
# comment that quotes the marker in a sentence leaves the function off the path (and, off a header, is no KVC101).
HEADERS = textwrap.dedent('''\
    from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


    class PrefillRunner:
        def quoted(self, scheduler_output):  # see docs: `# kvlint: connector-path` explains markers
            return EMPTY_MODEL_RUNNER_OUTPUT

        def told(self, scheduler_output):  # unlike `warm_up`, this is not # kvlint: connector-path territory
            return EMPTY_MODEL_RUNNER_OUTPUT

        def backticked(self):  # `# kvlint: connector-path[ec]`
            return EMPTY_MODEL_RUNNER_OUTPUT

        def marked(self, scheduler_output):  # kvlint: connector-path
            return EMPTY_MODEL_RUNNER_OUTPUT

        def spaced(self):  #kvlint:connector-path [ec]
            return EMPTY_MODEL_RUNNER_OUTPUT

        def with_noqa(self):  # kvlint: connector-path[kv, ec]  # noqa: E501
            return EMPTY_MODEL_RUNNER_OUTPUT

        def after_noqa(self):  # noqa: E501  # kvlint: connector-path[ec]
            return EMPTY_MODEL_RUNNER_OUTPUT

        def misspelt(self):  # see below  # kvlint: connector-path[kv, draft]
            return EMPTY_MODEL_RUNNER_OUTPUT

        def plain(self):  # the idle step: no connector here
            return EMPTY_MODEL_RUNNER_OUTPUT
''')


def test_a_def_line_comment_quoting_the_marker_marks_nothing(project: Path) -> None:
    (project / "prefill.py").write_text(HEADERS, encoding="utf-8")
    findings = run([Path(".")], Config(root=project), jobs=1).findings
    assert [(f.line, f.column, f.code, f.invariant) for f in findings] == [
        (15, 8, "KVC002", "kv"),  # `marked`
        (18, 8, "KVC002", "ec"),  # `spaced`: the marker's spacing is free
        (21, 8, "KVC002", "ec"),  # `with_noqa`: a directive beside `# noqa`, before it ...
        (21, 8, "KVC002", "kv"),
        (24, 8, "KVC002", "ec"),  # `after_noqa`: ... or after it
        (26, 38, "KVC101", ""),  # `misspelt`: the marker is the comment's second directive, `draft` is no invariant
        (27, 8, "KVC002", "kv"),
    ]
    assert findings[5].message.startswith("`# kvlint: connector-path[kv, draft]` names `draft`")
