"""A Tk sign-up form: name, email, a plan (radio buttons), a newsletter checkbox, Submit.

Submit writes the form as JSON to ``--out`` and changes the title to "sign-up form (submitted)".
Widgets sit at fixed pixel positions (``place``) so scripted solutions do not depend on fonts;
the text cursor does not blink, so screenshots of the same state are identical.
Run: ``python form.py --out result.json``.
"""

import argparse
import json
import tkinter as tk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, help="where Submit writes the JSON")
    args = parser.parse_args()

    root = tk.Tk(className="pixelrl-form")
    root.title("sign-up form")
    root.geometry("480x320+0+0")
    name, email = tk.StringVar(), tk.StringVar()
    plan, newsletter = tk.StringVar(value="basic"), tk.BooleanVar(value=False)
    status = tk.StringVar(value="")

    def row(label: str, y: int, var: tk.StringVar) -> tk.Entry:
        tk.Label(root, text=label, anchor="w").place(x=20, y=y, width=90, height=30)
        entry = tk.Entry(root, textvariable=var, insertofftime=0)
        entry.place(x=120, y=y, width=320, height=30)
        return entry

    row("Name", 20, name)
    row("Email", 70, email)
    tk.Label(root, text="Plan", anchor="w").place(x=20, y=120, width=90, height=30)
    for i, value in enumerate(("basic", "pro", "team")):
        tk.Radiobutton(root, text=value, value=value, variable=plan, anchor="w").place(
            x=120 + 100 * i, y=120, width=100, height=30
        )
    tk.Checkbutton(root, text="Send me the newsletter", variable=newsletter, anchor="w").place(
        x=120, y=170, width=320, height=30
    )

    def submit() -> None:
        data = {
            "name": name.get(),
            "email": email.get(),
            "plan": plan.get(),
            "newsletter": bool(newsletter.get()),
        }
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(data, f)
        status.set("saved")
        root.title("sign-up form (submitted)")

    tk.Button(root, text="Submit", command=submit).place(x=120, y=230, width=100, height=36)
    tk.Label(root, textvariable=status, anchor="w").place(x=240, y=230, width=200, height=36)
    root.mainloop()


if __name__ == "__main__":
    main()
