"""A Tk window that shows a code in a read-only entry, for clipboard tasks.

Run: ``python copy_code.py CODE``. Selecting the code and pressing Ctrl+C puts it on the
CLIPBOARD (Tk's standard entry bindings); the window title is "copy the code".
"""

import sys
import tkinter as tk


def main() -> None:
    code = sys.argv[1] if len(sys.argv) > 1 else "QX7R42"
    root = tk.Tk(className="pixelrl-copy")
    root.title("copy the code")
    root.geometry("360x120+0+0")
    tk.Label(root, text="Your code:", anchor="w").place(x=20, y=20, width=120, height=30)
    var = tk.StringVar(value=code)
    entry = tk.Entry(root, textvariable=var, state="readonly", insertofftime=0)
    entry.place(x=140, y=20, width=200, height=30)
    tk.Entry(root, insertofftime=0).place(x=140, y=70, width=200, height=30)
    tk.Label(root, text="Paste here:", anchor="w").place(x=20, y=70, width=120, height=30)
    root.mainloop()


if __name__ == "__main__":
    main()
