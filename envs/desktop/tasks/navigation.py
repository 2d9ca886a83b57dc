"""Task families that need finding first: menus, dialogs, scrolling, tabs, overlapping windows."""

from __future__ import annotations

from typing import Any

from pixelrl.envs.desktop.render import text_width
from pixelrl.envs.desktop.tasks import words
from pixelrl.envs.desktop.tasks.base import Plan, Task, click, find, need, right_align
from pixelrl.envs.desktop.widgets import (
    SCROLL_ROWS_PER_NOTCH,
    Button,
    Checkbox,
    Label,
    MenuBar,
    ScrollList,
    Tabs,
    Widget,
    Window,
)
from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import Action


class MenuItem(Task):
    family = "menu-item"
    description = "choose the named item from a window's menu bar (e.g. File > Save As...)"
    max_expert_steps = 2

    def build(self) -> None:
        t = self.theme
        names = list(words.MENUS)
        k = self.randint(3, 5)
        chosen = sorted(self.pick(names[1:], k - 1), key=names.index)
        menus = [
            (m, [i for i in words.MENUS[m] if i == "-" or self.chance(0.8)])
            for m in ["File", *chosen]
        ]
        menus = [
            (m, items if any(i != "-" for i in items) else list(words.MENUS[m]))
            for m, items in menus
        ]
        self.menu, items = self.pick(menus)
        self.item = self.pick([i for i in items if i != "-"])
        bar = MenuBar(menus)
        app = self.pick(words.EDITOR_APPS)
        body = [
            [
                Label(
                    self.pick(["Untitled document", "Welcome!", "Ready.", "No file open."]),
                    muted=True,
                )
            ]
        ]
        body += [[Label(" ")]] * self.randint(1, 3)
        min_w = sum(len(m) for m, _ in menus) * t.font_size + 4 * t.pad * len(menus)
        win = self.window(app, body, top=bar, min_width=min(t.width, min_w))
        # room under the menu bar for the longest menu
        longest = max(len(items) for _, items in menus) * (t.line_height + t.pad) + t.row_height
        win.size = (win.size[0], min(t.work_area[3], max(win.size[1], t.title_height + longest)))
        self.keep_open.append(self.place(win))
        path = f"{self.menu} > {self.item}"
        self.instruction = self.pick(
            [
                f"Choose {path} from the menu.",
                f'Use the menu bar to select "{self.item}" in the {self.menu} menu.',
                f"Click {path}.",
            ]
        )
        self.params = {"menu": self.menu, "item": self.item, "window": app}
        self.bar = bar

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "menu":
            self.succeed() if payload == f"{self.menu} > {self.item}" else self.fail()

    def progress(self) -> float:
        popup = self.desktop.popup
        return (
            0.5
            if popup is not None and popup.owner is self.bar and popup.name == self.menu
            else 0.0
        )

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        title = need(find(a11y, "menu", params["menu"], params["window"]), params["menu"])
        if title["state"].get("expanded"):
            return click(need(find(a11y, "menuitem", params["item"]), params["item"]))
        return click(title)


class CloseDialog(Task):
    family = "close-dialog"
    description = "dismiss a modal dialog with the named button or its close box"
    max_expert_steps = 1

    def build(self) -> None:
        t = self.theme
        title, message, labels = self.pick(words.DIALOGS)
        # the document window behind the dialog (blocked while the dialog is up)
        app = self.pick(words.EDITOR_APPS)
        main = self.window(
            app,
            [[Label("Document content...")], [Button("Help"), Button("Settings")]],
            min_width=round(self.randint(260, 420) * t.scale),
        )
        self.place(main)
        self.buttons = [Button(b, primary=i == 0) for i, b in enumerate(labels)]
        dialog = self.window(title, [[Label(message)], self.buttons], modal=True)
        right_align(self.buttons, dialog, t)
        for b in self.buttons:
            b.on_press = dialog.close
        self.dialog = self.place(dialog)
        use_close = self.chance(0.25)
        self.choice = "Close" if use_close else self.pick(list(labels))
        if use_close:
            self.instruction = self.pick(
                [
                    f'Close the "{title}" dialog with its close (x) button.',
                    "Dismiss the dialog using the x in its title bar.",
                ]
            )
        else:
            self.instruction = self.pick(
                [
                    f'Close the dialog by clicking "{self.choice}".',
                    f'Answer the "{title}" dialog with {self.choice}.',
                    f"Click {self.choice} in the dialog.",
                ]
            )
        self.params = {"button": self.choice, "window": title}

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "press" and widget in self.buttons:
            self.succeed() if widget.name == self.choice else self.fail()
        elif kind == "close" and widget is self.dialog and self.outcome is None:
            self.succeed() if self.choice == "Close" else self.fail()

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        return click(
            need(find(a11y, "button", params["button"], params["window"]), params["button"])
        )


LIST_POOLS = (
    words.COUNTRIES,
    words.CITIES + words.FOLDER_NAMES,
    words.FILE_NAMES,
    words.ITEMS,
    words.MONTHS + words.LANGUAGES,
)


class ScrollAndClick(Task):
    family = "scroll-and-click"
    description = "scroll a list until the named item shows, then select it"
    max_expert_steps = 2

    def build(self) -> None:
        t = self.theme
        rows = self.randint(4, max(4, min(8, self.fit_rows(2))))
        pool = self.pick(LIST_POOLS)
        n = self.randint(max(rows + 4, 12), min(30, len(pool)))
        items = self.pick(pool, n)
        if self.chance(0.5):
            items = sorted(items)
        width = max(len(s) for s in items) * t.font_size * 3 // 4 + 4 * t.pad
        self.list = ScrollList(
            self.pick(["Items", "Files", "Places", "Results"]), items, rows, width
        )
        self.index = self.randint(rows, n - 1)  # starts out of view
        self.item = items[self.index]
        title = self.pick(words.WINDOW_TITLES)
        content = [
            [Label(self.pick(["Pick one:", "Select an entry", "Browse"]))],
            [self.list],
            [Button("OK"), Button("Cancel")],
        ]
        self.keep_open.append(self.place(self.window(title, content)))
        self.instruction = self.pick(
            [
                f'Scroll the list and select "{self.item}".',
                f"Find {self.item} in the list and click it.",
                f'Select the list entry "{self.item}" (scroll down to it).',
            ]
        )
        self.params = {"list": self.list.name, "item": self.item, "window": title}

    def satisfied(self) -> bool:
        return self.list.selected == self.index

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "press":
            self.fail()  # OK / Cancel close the chooser before the item was selected

    def progress(self) -> float:
        return 0.5 if self.list.item_rect(self.index) is not None else 0.0

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        lst = need(find(a11y, "list", params["list"], params["window"]), params["list"])
        item = need(find(a11y, "listitem", params["item"], list=params["list"]), params["item"])
        if item["state"]["visible"]:
            return click(item)
        top, rows, i = lst["state"]["top"], lst["state"]["rows"], item["state"]["index"]
        if i < top:
            notches = -(-(top - i) // SCROLL_ROWS_PER_NOTCH)
            return Plan(Action.scroll(*bbox_center(lst["bbox"]), dy=-notches), lst)
        notches = -(-(i - (top + rows - 1)) // SCROLL_ROWS_PER_NOTCH)
        return Plan(Action.scroll(*bbox_center(lst["bbox"]), dy=notches), lst)


class SwitchTabAndClick(Task):
    family = "switch-tab-and-click"
    description = "open the named tab, then click the named button on it"
    max_expert_steps = 2

    def build(self) -> None:
        n_tabs = self.randint(3, 4)
        titles = self.pick(words.TAB_NAMES, n_tabs)
        labels = iter(self.pick(words.SETTINGS_BUTTONS, 2 * n_tabs))
        extras = iter(self.pick(words.ITEMS, 2 * n_tabs))
        t = self.theme
        pages = []
        for _ in titles:
            kids: list[Widget] = []
            y = t.pad
            for _ in range(2):
                b = Button(next(labels))
                w, h = b.preferred_size(t)
                b.rect = (t.pad, y, t.pad + w, y + h)
                kids.append(b)
                y += h + t.gap
            if self.chance(0.5):
                c = Checkbox(f"Enable {next(extras).lower()}", self.chance(0.5))
                w, h = c.preferred_size(t)
                c.rect = (t.pad, y, t.pad + w, y + h)
                kids.append(c)
            pages.append(kids)
        tabs = Tabs(list(zip(titles, pages)), selected=0)
        page_w = max(k.rect[2] for page in pages for k in page) + t.pad
        header_w = sum(text_width(s, t.font_size) + 3 * t.pad for s in titles) + t.pad
        width = max(page_w, header_w)
        height = t.row_height + max(k.rect[3] for page in pages for k in page) + t.pad
        pad = 2 * t.pad
        tabs.rect = (pad, t.title_height + pad, pad + width, t.title_height + pad + height)
        title = self.pick(["Settings", "System Preferences", "Options", "Control Panel"])
        win = Window(
            title, (min(t.width, width + 2 * pad), t.title_height + height + 2 * pad), [tabs]
        )
        self.keep_open.append(self.place(win))
        self.page = self.randint(1, n_tabs - 1)
        page_buttons = [k for k in pages[self.page] if isinstance(k, Button)]
        self.target = self.pick(page_buttons)
        self.tab = titles[self.page]
        self.tabs = tabs
        self.instruction = self.pick(
            [
                f'Go to the "{self.tab}" tab and click "{self.target.name}".',
                f"Open the {self.tab} tab, then press {self.target.name}.",
                f"Click {self.target.name} on the {self.tab} tab.",
            ]
        )
        self.params = {"tab": self.tab, "button": self.target.name, "window": title}

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "press":
            self.succeed() if widget is self.target else self.fail()

    def progress(self) -> float:
        return 0.5 if self.tabs.selected == self.page else 0.0

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        tab = need(find(a11y, "tab", params["tab"], params["window"]), params["tab"])
        if not tab["state"]["selected"]:
            return click(tab)
        return click(
            need(find(a11y, "button", params["button"], params["window"]), params["button"])
        )


class MultiWindow(Task):
    family = "multi-window"
    description = "bring the named window to the front, then click the named button in it"
    max_expert_steps = 2

    def build(self) -> None:
        t = self.theme
        apps = self.pick(words.APPS, self.randint(2, 3))
        shared = self.pick(["Refresh", "Send", "Save", "Sync", "Share"])
        wins: list[Window] = []
        for app in apps:
            others = self.pick([b for b in words.BUTTON_LABELS if b != shared], self.randint(1, 2))
            labels = [shared, *others]
            order = self.rng.permutation(len(labels))
            buttons = [Button(labels[int(i)]) for i in order]
            rows: list[list[Widget]] = [[Label(f"{app} window")], buttons]
            wins.append(self.window(app, rows, min_width=round(self.randint(200, 300) * t.scale)))
        target_win = wins[0]
        self.place(target_win)
        self.target = self.pick([b for b in target_win.kids if isinstance(b, Button)])
        # the next window covers the target button's centre
        cx, cy = bbox_center(self.target.abs_rect())
        cover = wins[1]
        w, h = cover.size
        area = t.work_area
        x_lo, x_hi = max(0, cx - w + 1 + t.pad), min(area[2] - w, cx - t.pad)
        y_lo, y_hi = max(0, cy - h + 1 + t.pad), min(area[3] - h, cy - t.pad)
        if x_lo > x_hi:
            x_lo = x_hi = min(max(0, cx - w // 2), area[2] - w)
        if y_lo > y_hi:
            y_lo = y_hi = min(max(0, cy - h // 2), area[3] - h)
        self.desktop.add_window(cover, self.randint(x_lo, x_hi), self.randint(y_lo, y_hi))
        for extra in wins[2:]:
            self.place(extra)
        # the taskbar lists the windows in a random order (not always the target first)
        for w, serial in zip(wins, self.rng.permutation(len(wins))):
            w.serial = int(serial)
        self.desktop.taskbar.invalidate()
        self.keep_open.extend(wins)
        self.window_name = target_win.name
        self.target_window = target_win
        self.instruction = self.pick(
            [
                f'In the "{target_win.name}" window, click "{self.target.name}".',
                f"Switch to {target_win.name} and press its {self.target.name} button.",
                f"Bring the {target_win.name} window to the front and click {self.target.name}.",
            ]
        )
        self.params = {"button": self.target.name, "window": target_win.name}

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "press":
            self.succeed() if widget is self.target else self.fail()

    def progress(self) -> float:
        return 0.5 if self.desktop.top_window() is self.target_window else 0.0

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        button = need(find(a11y, "button", params["button"], params["window"]), params["button"])
        if button["state"]["visible"]:
            return click(button)
        return click(need(find(a11y, "taskbutton", params["window"]), params["window"]))
