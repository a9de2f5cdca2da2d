"""The progress bar `kvlint audit` draws on a terminal's stderr while the run goes."""

from __future__ import annotations


PROGRESS_MIN_FILES = 20  # fewer files than this finish before a bar is worth drawing


class ProgressBar:
    """A rich progress bar on stderr, drawn only once a run proves to have many files; `None`-safe to call."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.progress = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN_FILES:
            return
        if self.progress is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                TextColumn("kvlint: analysing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(stderr=True), transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("files", total=total)
        self.progress.update(self.task, completed=done, total=total)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()
