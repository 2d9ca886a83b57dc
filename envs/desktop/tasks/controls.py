"""Task families over the controls of one window: buttons, fields, forms, boxes, choices, sliders."""

from __future__ import annotations

from typing import Any

from pixelrl.envs.desktop.tasks import words
from pixelrl.envs.desktop.tasks.base import Plan, Task, click, edit_plan, find, need, right_align
from pixelrl.envs.desktop.widgets import (
    Button,
    Checkbox,
    Dropdown,
    Label,
    Radio,
    RadioGroup,
    Slider,
    TextField,
    Widget,
)
from pixelrl.envs.gui_action import Action


def _distractor_window(task: Task, exclude: set[str]) -> None:
    """Maybe a window of unrelated buttons underneath (placed before the task's window)."""
    if not task.chance(0.5):
        return
    labels = [b for b in words.BUTTON_LABELS if b not in exclude]
    n = task.randint(2, 4)
    buttons = [Button(b) for b in task.pick(labels, n)]
    rows = [buttons[i : i + 2] for i in range(0, n, 2)]
    title = task.pick([w for w in words.WINDOW_TITLES if w not in exclude])
    exclude.add(title)
    exclude.update(b.name for b in buttons)
    task.place(task.window(title, rows))


class ClickButton(Task):
    family = "click-button"
    description = "click the button with the named label among several"
    max_expert_steps = 1

    def build(self) -> None:
        n = self.randint(3, min(9, 3 * self.fit_rows(1)))
        labels = self.pick(words.BUTTON_LABELS, n)
        target = self.pick(labels)
        used = set(labels)
        _distractor_window(self, used)
        rows_free = self.fit_rows(2)
        per_row = max(-(-n // rows_free), self.randint(1, 3))
        buttons = [Button(b, primary=self.chance(0.15)) for b in labels]
        rows: list[list[Widget]] = [buttons[i : i + per_row] for i in range(0, n, per_row)]
        if self.chance(0.5):
            rows.insert(
                0, [Label(self.pick(["Choose an action:", "What next?", "Actions", "Pick one:"]))]
            )
        title = self.pick([w for w in words.WINDOW_TITLES if w not in used])
        self.target = next(b for b in buttons if b.name == target)
        self.keep_open.append(self.place(self.window(title, rows)))
        self.instruction = self.pick(
            [
                f'Click the "{target}" button.',
                f"Press {target}.",
                f'Click on "{target}".',
                f"Find the {target} button and click it.",
            ]
        )
        self.params = {"button": target, "window": title}

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "press":
            self.succeed() if widget is self.target else self.fail()

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        return click(
            need(find(a11y, "button", params["button"], params["window"]), params["button"])
        )


FIELD_LABELS = (
    "Name",
    "Username",
    "Search",
    "City",
    "Title",
    "Comment",
    "Tag",
    "Keyword",
    "Note",
    "Label",
)


class TypeInField(Task):
    family = "type-in-field"
    description = "type the given text into the named text field and press enter"
    vocabulary = words.WORDS
    max_expert_steps = 3

    def build(self) -> None:
        n = self.randint(1, min(3, self.fit_rows()))
        labels = self.pick(FIELD_LABELS, n)
        text = self.pick(words.WORDS)
        fields = []
        for lab in labels:
            prefill = self.pick([w for w in words.WORDS if w != text]) if self.chance(0.25) else ""
            fields.append(TextField(lab, prefill, width_chars=self.randint(12, 18)))
        self.target = self.pick(fields)
        rows = [[Label(f.name + ":"), f] for f in fields]
        title = self.pick(words.WINDOW_TITLES)
        self.keep_open.append(self.place(self.window(title, rows, columns=True)))
        self.text = text
        self.instruction = self.pick(
            [
                f'Type "{text}" into the {self.target.name} field and press Enter.',
                f'Enter "{text}" in {self.target.name}, then press Enter.',
                f'Set the {self.target.name} field to "{text}" and submit it with Enter.',
            ]
        )
        self.params = {"field": self.target.name, "text": text, "window": title}

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "submit":
            self.succeed() if widget is self.target and payload == self.text else self.fail()

    def progress(self) -> float:
        return 0.5 if self.target.value == self.text else 0.0

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        field = need(find(a11y, "textbox", params["field"], params["window"]), params["field"])
        return edit_plan(field, params["text"], submit=True)


FORM_FIELDS = {
    "Name": words.FIRST_NAMES,
    "Last name": words.LAST_NAMES,
    "City": words.CITIES,
    "Email": words.EMAILS,
    "Phone": words.PHONES,
    "Company": words.COMPANIES,
    "Country": words.COUNTRIES,
}


class FillForm(Task):
    family = "fill-form"
    description = "fill several labelled fields with the given values, then click Submit"
    vocabulary = tuple(v for pool in FORM_FIELDS.values() for v in pool)
    max_expert_steps = 9

    def build(self) -> None:
        n = self.randint(2, max(2, min(4, self.fit_rows(2))))
        labels = self.pick(list(FORM_FIELDS), n)
        self.wanted = {lab: self.pick(FORM_FIELDS[lab]) for lab in labels}
        self.fields = [TextField(lab, width_chars=self.randint(14, 20)) for lab in labels]
        submit_label = self.pick(["Submit", "Send", "Save", "Register"])
        self.submit = Button(submit_label, primary=True)
        others = [Button(b) for b in self.pick(["Cancel", "Reset", "Clear"], self.randint(1, 2))]
        rows: list[list[Widget]] = [[Label(f.name + ":"), f] for f in self.fields]
        footer = [*others, self.submit] if self.chance(0.5) else [self.submit, *others]
        rows.append(footer)
        title = self.pick(
            ["Registration", "Contact form", "New account", "Sign up", "Order details", "Profile"]
        )
        win = self.window(title, rows, columns=False)
        # the form's fields share a column
        lw = max(r[0].rect[2] - r[0].rect[0] for r in rows[:-1])
        for lab, f in rows[:-1]:
            w = f.rect[2] - f.rect[0]
            f.rect = (
                lab.rect[0] + lw + self.theme.gap,
                f.rect[1],
                lab.rect[0] + lw + self.theme.gap + w,
                f.rect[3],
            )
        need_w = max(f.rect[2] for f in self.fields) + 2 * self.theme.pad
        win.size = (min(self.theme.width, max(win.size[0], need_w)), win.size[1])
        right_align(footer, win, self.theme)
        self.keep_open.append(self.place(win))
        spec = ", ".join(f"{k}: {v}" for k, v in self.wanted.items())
        self.instruction = self.pick(
            [
                f"Fill in the form with {spec}, then click {submit_label}.",
                f"Enter {spec} and press the {submit_label} button.",
                f"Complete the form ({spec}) and click {submit_label}.",
            ]
        )
        self.params = {"fields": dict(self.wanted), "submit": submit_label, "window": title}

    def correct(self) -> int:
        return sum(f.value == self.wanted[f.name] for f in self.fields)

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "press":
            self.succeed() if widget is self.submit and self.correct() == len(
                self.fields
            ) else self.fail()

    def progress(self) -> float:
        return 0.9 * self.correct() / len(self.fields)

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        window = params["window"]
        for label, wanted in params["fields"].items():
            field = need(find(a11y, "textbox", label, window), label)
            if field["state"]["value"] != wanted:
                return edit_plan(field, wanted)
        return click(need(find(a11y, "button", params["submit"], window), params["submit"]))


class CheckBoxes(Task):
    family = "check-boxes"
    description = "tick exactly the named checkboxes, then click Submit"
    max_expert_steps = 8

    def build(self) -> None:
        fit = self.fit_rows(2)
        n = self.randint(3, 7)
        two_columns = n > fit or self.chance(0.3)
        n = min(n, fit * (2 if two_columns else 1))
        labels = self.pick(words.ITEMS, n)
        self.boxes = [Checkbox(lab, checked=self.chance(0.3)) for lab in labels]
        k = self.randint(1, max(1, n - 1))
        self.wanted = set(self.pick(labels, k))
        per_row = 2 if two_columns else 1
        rows: list[list[Widget]] = [
            [Label(self.pick(["Select items:", "Shopping list", "Pick your items"]), bold=True)]
        ]
        rows += [self.boxes[i : i + per_row] for i in range(0, n, per_row)]
        self.submit = Button(self.pick(["Submit", "OK", "Done"]), primary=True)
        rows.append([self.submit])
        title = self.pick(words.WINDOW_TITLES)
        win = self.window(title, rows, columns=two_columns)
        right_align([self.submit], win, self.theme)
        self.keep_open.append(self.place(win))
        names = [b.name for b in self.boxes if b.name in self.wanted]
        spec = ", ".join(names)
        self.instruction = self.pick(
            [
                f"Select {spec} and nothing else, then click {self.submit.name}.",
                f"Check exactly these boxes: {spec}. Then press {self.submit.name}.",
                f"Make sure only {spec} are ticked and click {self.submit.name}.",
            ]
        )
        self.params = {"checked": names, "submit": self.submit.name, "window": title}

    def right_boxes(self) -> int:
        return sum(b.checked == (b.name in self.wanted) for b in self.boxes)

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        if kind == "press":
            self.succeed() if widget is self.submit and self.right_boxes() == len(
                self.boxes
            ) else self.fail()

    def progress(self) -> float:
        return 0.9 * self.right_boxes() / len(self.boxes)

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        wanted = set(params["checked"])
        wrong = [
            e
            for e in a11y
            if e["role"] == "checkbox"
            and e["state"].get("window") == params["window"]
            and e["state"]["checked"] != (e["name"] in wanted)
        ]
        if wrong:  # any wrong box is as good a next click as the first
            return click(wrong[0], wrong[1:])
        return click(
            need(find(a11y, "button", params["submit"], params["window"]), params["submit"])
        )


DROPDOWNS = {
    "Country": words.COUNTRIES,
    "Color": words.COLORS,
    "Size": words.SIZES,
    "Language": words.LANGUAGES,
    "Month": words.MONTHS,
}


class SelectDropdown(Task):
    family = "select-dropdown"
    description = "open the named dropdown and choose the given option"
    max_expert_steps = 2

    def build(self) -> None:
        t = self.theme
        n = self.randint(1, min(2, self.fit_rows()))
        names = self.pick(list(DROPDOWNS), n)
        max_options = max(
            3, min(8, (t.work_area[3] // 2 - t.row_height) // (t.line_height + t.pad))
        )
        self.dropdowns = []
        for name in names:
            pool = DROPDOWNS[name]
            options = self.pick(pool, self.randint(3, min(len(pool), max_options)))
            selected = self.randint(0, len(options) - 1) if self.chance(0.5) else None
            self.dropdowns.append(Dropdown(name, options, selected))
        self.target = self.pick(self.dropdowns)
        choices = [o for i, o in enumerate(self.target.options) if i != self.target.selected]
        self.option = self.pick(choices)
        rows = [[Label(d.name + ":"), d] for d in self.dropdowns]
        title = self.pick(words.WINDOW_TITLES)
        self.keep_open.append(self.place(self.window(title, rows, columns=True)))
        self.instruction = self.pick(
            [
                f'Select "{self.option}" from the {self.target.name} dropdown.',
                f"Choose {self.option} as the {self.target.name}.",
                f'Set {self.target.name} to "{self.option}".',
            ]
        )
        self.params = {"dropdown": self.target.name, "option": self.option, "window": title}

    def satisfied(self) -> bool:
        return self.target.value == self.option

    def progress(self) -> float:
        return 0.5 if self.target.state().get("expanded") else 0.0

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        box = need(find(a11y, "combobox", params["dropdown"], params["window"]), params["dropdown"])
        if box["state"].get("expanded"):
            return click(need(find(a11y, "option", params["option"]), params["option"]))
        return click(box)


QUESTIONS = {
    "Shipping": ("Standard", "Express", "Overnight", "Pickup"),
    "Payment": ("Card", "Cash", "Transfer", "Voucher"),
    "Theme": ("Light", "Dark", "System"),
    "Frequency": ("Daily", "Weekly", "Monthly", "Never"),
    "Difficulty": ("Easy", "Normal", "Hard", "Expert"),
    "Seat": ("Window", "Aisle", "Middle"),
}


class ChooseRadio(Task):
    family = "choose-radio"
    description = "select the named option of a radio group"
    max_expert_steps = 1

    def build(self) -> None:
        fit = self.fit_rows()
        groups_n = 2 if fit >= 10 and self.chance(0.5) else 1
        names = self.pick(list(QUESTIONS), groups_n)
        rows: list[list[Widget]] = []
        self.groups: list[RadioGroup] = []
        horizontal = fit < 6 or self.chance(0.4)
        for name in names:
            group = RadioGroup(name)
            opts = QUESTIONS[name]
            start = self.randint(0, len(opts) - 1) if self.chance(0.6) else None
            radios = [Radio(o, group, checked=i == start) for i, o in enumerate(opts)]
            rows.append([Label(name + ":", bold=True)])
            rows += [radios] if horizontal else [[r] for r in radios]
            self.groups.append(group)
        self.group = self.pick(self.groups)
        choices = [r.name for r in self.group.radios if not r.checked]
        self.option = self.pick(choices)
        title = self.pick(words.WINDOW_TITLES)
        self.keep_open.append(self.place(self.window(title, rows)))
        self.instruction = self.pick(
            [
                f'Select "{self.option}" for {self.group.name}.',
                f"Choose the {self.option} option under {self.group.name}.",
                f"Set {self.group.name} to {self.option}.",
            ]
        )
        self.params = {"group": self.group.name, "option": self.option, "window": title}

    def satisfied(self) -> bool:
        sel = self.group.selected
        return sel is not None and sel.name == self.option

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        return click(
            need(
                find(a11y, "radio", params["option"], params["window"], group=params["group"]),
                params["option"],
            )
        )


SLIDER_RANGES = (
    (0, 100, 1),
    (0, 100, 5),
    (0, 100, 10),
    (0, 10, 1),
    (0, 50, 1),
    (10, 200, 10),
    (-50, 50, 5),
)


class SetSlider(Task):
    family = "set-slider"
    description = "drag or click the named slider to the given value"
    max_expert_steps = 1

    def build(self) -> None:
        t = self.theme
        n = self.randint(1, min(3, self.fit_rows()))
        names = self.pick(words.SLIDER_NAMES, n)
        self.sliders = []
        for name in names:
            lo, hi, step = SLIDER_RANGES[self.randint(0, len(SLIDER_RANGES) - 1)]
            steps = (hi - lo) // step
            # every value needs its own pixel: the track is wider than the number of steps
            width = max(steps + 2, round(self.randint(120, 220) * t.scale))
            value = lo + step * self.randint(0, steps)
            self.sliders.append(Slider(name, lo, hi, step, value, width))
        self.target = self.pick(self.sliders)
        s = self.target
        values = [v for v in range(s.minimum, s.maximum + 1, s.step) if v != s.value]
        self.value = self.pick(values)
        rows = [[Label(sl.name + ":"), sl] for sl in self.sliders]
        title = self.pick(["Sound", "Display", "Mixer", "Adjustments", *words.WINDOW_TITLES[:4]])
        self.keep_open.append(self.place(self.window(title, rows, columns=True)))
        self.instruction = self.pick(
            [
                f"Set {s.name} to {self.value}.",
                f"Move the {s.name} slider to {self.value}.",
                f"Adjust {s.name} so that it reads {self.value}.",
            ]
        )
        self.params = {"slider": s.name, "value": self.value, "window": title}

    def satisfied(self) -> bool:
        return self.target.value == self.value

    def progress(self) -> float:
        s = self.target
        return 0.5 * (1 - abs(s.value - self.value) / (s.maximum - s.minimum))

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        el = need(find(a11y, "slider", params["slider"], params["window"]), params["slider"])
        st = el["state"]
        x0, y0, x1, y1 = st["track"]
        x = x0 + round((params["value"] - st["min"]) / (st["max"] - st["min"]) * (x1 - x0 - 1))
        return Plan(Action.click(x, (y0 + y1 - 1) // 2), el)
