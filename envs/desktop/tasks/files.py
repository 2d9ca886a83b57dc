"""Task families on the desktop's file icons: open, drag onto a folder or the trash, rename."""

from __future__ import annotations

from typing import Any

from pixelrl.envs.desktop.tasks import words
from pixelrl.envs.desktop.tasks.base import (
    Plan,
    Task,
    click,
    double_click,
    edit_plan,
    find,
    need,
    right_click,
)
from pixelrl.envs.desktop.widgets import Button, Icon, Label, Widget
from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import Action

ICON_COLORS = (
    (230, 180, 60),
    (90, 150, 220),
    (110, 190, 110),
    (220, 100, 90),
    (160, 110, 200),
    (240, 140, 60),
)
EXTENSION_KIND = {"jpg": "image", "png": "image"}


def file_icon(task: Task, name: str) -> Icon:
    kind = EXTENSION_KIND.get(name.rsplit(".", 1)[-1], "file")
    return Icon(name, kind, task.pick(ICON_COLORS))


def populate(task: Task, n_files: int, n_folders: int, trash: bool, apps: int = 0) -> list[Icon]:
    """Random file, folder and app icons (and maybe the trash) laid out on the desktop."""
    icons = [file_icon(task, f) for f in task.pick(words.FILE_NAMES, n_files)]
    icons += [
        Icon(f, "folder", task.pick(ICON_COLORS[:3]))
        for f in task.pick(words.FOLDER_NAMES, n_folders)
    ]
    icons += [Icon(a, "app", task.pick(ICON_COLORS)) for a in task.pick(words.APP_NAMES, apps)]
    order = task.rng.permutation(len(icons))
    icons = [icons[int(i)] for i in order]
    if trash:
        icons.append(Icon("Trash", "trash", (150, 150, 150)))
    task.place_icons(icons)
    return icons


def icon_capacity(task: Task) -> int:
    """How many icons fit in the left part of the screen (windows go to the right)."""
    t = task.theme
    cw, ch = Icon("", "file", (0, 0, 0)).cell_size(t)
    rows = max(1, (t.work_area[3] - t.pad) // (ch + t.pad))
    cols = max(1, (t.width * 3 // 5) // (cw + t.pad))
    return rows * cols


def side_window(task: Task, icons: list[Icon]) -> None:
    """Maybe an unrelated window to the right of the icons (a distractor that covers none)."""
    t = task.theme
    right = max(i.rect[2] for i in icons) + t.pad
    if t.width - right < 160 * t.scale or not task.chance(0.6):
        return
    labels = task.pick(words.BUTTON_LABELS, task.randint(1, 3))
    win = task.window(
        task.pick(words.WINDOW_TITLES),
        [[Label("Nothing to do here.")], [Button(b) for b in labels]],
    )
    if win.size[0] <= t.width - right:
        task.place(win, (right, 0, t.width, t.work_area[3]))


class OpenIcon(Task):
    family = "open-icon"
    description = "double-click the named desktop icon to open it"
    max_expert_steps = 1

    def build(self) -> None:
        cap = icon_capacity(self)
        n = self.randint(3, max(3, min(12, cap - 1)))
        n_folders = self.randint(1, max(1, n // 3))
        apps = self.randint(0, 2) if n - n_folders > 3 else 0
        icons = populate(self, n - n_folders - apps, n_folders, trash=True, apps=apps)
        side_window(self, icons)
        self.target = self.pick(icons)
        name, kind = self.target.name, self.target.kind
        if kind == "trash":
            self.instruction = self.pick(
                ["Open the Trash.", "Double-click the Trash icon.", "Open Trash."]
            )
        else:
            noun = {"folder": "folder", "app": "application", "image": "image"}.get(kind, "file")
            self.instruction = self.pick(
                [
                    f'Open "{name}".',
                    f'Double-click the {noun} "{name}" on the desktop.',
                    f"Open the {noun} named {name}.",
                ]
            )
        self.params = {"icon": name}

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "open":
            self.succeed() if widget is self.target else self.fail()
        elif kind in ("delete", "drop", "rename"):
            self.fail()

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        return double_click(need(find(a11y, "icon", params["icon"]), params["icon"]))


class DragToTarget(Task):
    family = "drag-to-target"
    description = "drag the named file onto the named folder or the trash"
    max_expert_steps = 1

    def build(self) -> None:
        cap = icon_capacity(self)
        n = self.randint(4, max(4, min(12, cap - 1)))
        n_folders = self.randint(1, max(1, n // 3))
        icons = populate(self, n - n_folders, n_folders, trash=True)
        side_window(self, icons)
        files = [i for i in icons if i.kind in ("file", "image")]
        targets = [i for i in icons if i.kind in ("folder", "trash")]
        self.source, self.target = self.pick(files), self.pick(targets)
        f, d = self.source.name, self.target.name
        if self.target.kind == "trash":
            self.instruction = self.pick(
                [
                    f'Move "{f}" to the Trash.',
                    f'Drag "{f}" onto the Trash.',
                    f"Throw {f} away by dragging it to the Trash.",
                ]
            )
        else:
            self.instruction = self.pick(
                [
                    f'Drag "{f}" into the "{d}" folder.',
                    f"Move {f} into {d}.",
                    f'Put "{f}" in the folder "{d}".',
                ]
            )
        self.params = {"icon": f, "target": d}

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "drop":
            self.succeed() if widget is self.source and payload is self.target else self.fail()
        elif kind in ("delete", "rename"):
            self.fail()

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        src = need(find(a11y, "icon", params["icon"]), params["icon"])
        dst = need(find(a11y, "icon", params["target"]), params["target"])
        return Plan(Action.drag(*bbox_center(src["bbox"]), *bbox_center(dst["bbox"])), src)


def _rename_targets() -> tuple[str, ...]:
    exts = sorted({f.rsplit(".", 1)[1] for f in words.FILE_NAMES})
    return tuple(f"{s}.{e}" for s in words.NEW_STEMS for e in exts)


class RenameFile(Task):
    family = "rename-file"
    description = "rename the named file (right-click > Rename, type, enter)"
    vocabulary = words.NEW_STEMS + _rename_targets()
    max_expert_steps = 3

    def build(self) -> None:
        cap = icon_capacity(self)
        n = self.randint(3, max(3, min(10, cap - 1)))
        n_folders = self.randint(0, max(0, n // 3))
        icons = populate(self, n - n_folders, n_folders, trash=self.chance(0.7))
        side_window(self, icons)
        files = [i for i in icons if i.kind in ("file", "image")]
        self.target = self.pick(files)
        self.old = self.target.name
        stem, ext = self.old.rsplit(".", 1)
        self.new = f"{self.pick([s for s in words.NEW_STEMS if s != stem])}.{ext}"
        self.instruction = self.pick(
            [
                f'Rename "{self.old}" to "{self.new}".',
                f"Change the name of {self.old} to {self.new}.",
                f'Give the file "{self.old}" the new name "{self.new}".',
            ]
        )
        self.params = {"icon": self.old, "name": self.new}

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "rename":
            self.succeed() if widget is self.target and payload == (
                self.old,
                self.new,
            ) else self.fail()
        elif kind in ("delete", "drop"):
            self.fail()

    def progress(self) -> float:
        return 0.5 if self.target.editor is not None else 0.0

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        editor = find(a11y, "textbox", f"Rename {params['icon']}")
        if editor is not None:
            return edit_plan(editor, params["name"], submit=True)
        item = find(a11y, "menuitem", "Rename")
        if item is not None:
            return click(item)
        return right_click(need(find(a11y, "icon", params["icon"]), params["icon"]))
