"""Copy or unpack one student's upload into a scratch folder, within limits checked first.

Nothing from an upload is trusted. Every limit is checked *before* anything is written, from
what can be read without inflating (the zip's end record, its central directory, a folder's
own entries), and again on the bytes actually written (an archive's headers are written by
whoever made it):

- depth: no path deeper than `max_depth` folders (an entry nested 1100 folders deep would
  otherwise exhaust the recursion of whatever walks it next);
- names: no name longer than 255 bytes, no path longer than 1024;
- entries and bytes: at most `max_files` files and `max_total_bytes` unpacked, over the whole
  upload (a zip bomb stops here). An upload over them is unpacked once more without what the
  grader never reads and no course script needs (Python environments, datasets, checkpoints,
  images: `DATA_SUFFIXES`), each left-out file named for the student; only where the code,
  answers and report alone are over is the upload rejected;
- compression: only the methods Python inflates (stored, deflate, bzip2, lzma); Deflate64
  (method 9, what Windows Explorer writes for large files) and others are named in the
  rejection with what to do instead;
- kinds: no `..` or absolute paths, no special files, no encryption. A symbolic link (macOS
  Finder's "Compress" and `zip -ry` store `practical4/data -> ~/datasets` as one; a folder
  upload may hold one) is skipped: never followed, never created; each is kept with its target
  (`Budget.links`) for the student's report and instructor.md;
- a `.zip` that is no zip at all (a RAR or 7z renamed): what it is, for a person to look at
  (`NeedsPerson`, no grade), like a `.rar` beside the files, and so is a zip that is damaged
  (cut short, a bad CRC: an upload that did not finish is no verdict on the work), and so
  is a password-protected one (no verdict on the work either).

Only archives at the top of a student's entry are unpacked (never a zip inside a zip), so a
nested bomb is never opened. Files are written 0644 and folders 0755 whatever the archive
says: the sandboxed run reads them as an unprivileged user.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from grader.common.environments import ENVIRONMENT_MARKS, ENVIRONMENT_PARTS, is_environment

CHUNK = 1 << 16
# Never copied, never hashed: OS junk, version-control history (thousands of files that
# would hit the file limit), and bytecode (a stale .pyc could run other code than the .py
# shows; Python rebuilds it from the source anyway).
JUNK_NAMES = {"__MACOSX", ".DS_Store", "Thumbs.db", "__pycache__", ".git"}
# `<full name>_<participant id>_assign<submission|feedback>_<plugin>_<original file name>`
# Moodle's prefix comes first and the rest is the student's own file name, which may imitate
# one ("x_999_assignsubmission_file_y.zip"): the first match is Moodle's, so the name is lazy.
MOODLE_NAME = re.compile(
    r"^(?P<name>.+?)_(?P<pid>\d+)_assign(?:submission|feedback)_(?P<plugin>[A-Za-z0-9]+)_(?P<rest>.*)$")

# What zipfile inflates; everything else is refused by name before a byte is read.
SUPPORTED_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate",
                     zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}
KNOWN_METHODS = {9: "Deflate64", 6: "implode", 1: "shrink", 93: "Zstandard", 95: "xz",
                 96: "JPEG", 97: "WavPack", 98: "PPMd", 99: "AES encryption"}
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024
FILE_MODE, DIR_MODE = 0o644, 0o755


class Rejected(Exception):
    """The submission cannot be graded; the message is shown to the instructor and stored."""


class DataInTheWay(Rejected):
    """The upload cannot be unpacked whole (more bytes or files than the limits allow; a data
    file compressed in a way Python cannot inflate): `prepare` unpacks it again leaving out its
    data (`Budget(leave_out=True)`) before it rejects it."""


class NeedsPerson(Rejected):
    """Not a verdict on the student's work (no grade, no zero): what was found cannot be graded
    or decided by the grader (nothing the graded assignments expect, two different versions of
    one assignment, an archive of a kind it cannot unpack), and a person should look."""


@dataclass(frozen=True)
class UnpackLimits:
    """Per submission, over everything copied or unpacked."""
    max_total_bytes: int = 200 * 1024 * 1024
    max_files: int = 5000
    max_depth: int = 32
    # Entries looked at, unpacked or left out: a virtual environment with torch in it lists
    # some 20,000 files, CIFAR-10 as PNGs 60,000; what zipfile holds in memory per entry (some
    # hundreds of bytes) bounds it.
    max_listed: int = 100_000


# What the grader never reads and no course script loads (the course's work trains on random
# tensors: no dataset is downloaded, no model saved and loaded): left out of an upload over the
# limits. Nested archives are here too: only archives at the top of an upload are unpacked.
DATA_SUFFIXES = frozenset({
    # saved models and arrays
    ".pt", ".pth", ".ckpt", ".bin", ".safetensors", ".onnx", ".h5", ".hdf5", ".npy", ".npz",
    ".pkl", ".pickle", ".joblib", ".msgpack", ".tfrecord", ".parquet", ".arrow", ".feather",
    ".lmdb", ".mdb", ".idx", ".ubyte", ".mat",
    # images, audio and video
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".ico", ".heic",
    ".mp4", ".mov", ".avi", ".mkv", ".webm", ".wav", ".mp3", ".flac",
    # archives never unpacked
    ".zip", ".tar", ".gz", ".tgz", ".bz2", ".tbz2", ".xz", ".txz", ".7z", ".rar", ".zst",
})
# Whole names and endings of what tools write beside the code: profiler and Nsight traces,
# TensorBoard's event files, torchvision's extracted CIFAR batches (no suffix at all).
DATA_ENDINGS = (".pt.trace.json", ".nsys-rep", ".qdrep", ".qdstrm", ".ncu-rep", ".sqlite",
                ".pstats", ".prof")
DATA_NAME_PARTS = ("tfevents",)
# Folders of data only, whatever their files are called: datasets as torchvision extracts them,
# experiment trackers' logs.
DATA_FOLDERS = frozenset({"cifar-10-batches-py", "cifar-100-python", "MNIST", "FashionMNIST",
                          "KMNIST", "EMNIST", "wandb", "mlruns", "lightning_logs"})
# What a Python environment is, and its own parts: grader/common/environments.py.


def is_data_file(name: str) -> bool:
    lowered = name.lower()
    return (os.path.splitext(lowered)[1] in DATA_SUFFIXES or lowered.endswith(DATA_ENDINGS)
            or any(part in lowered for part in DATA_NAME_PARTS))


def is_data_path(parts) -> bool:
    """A file the grader never reads: of a data kind, or in a folder of data only."""
    return is_data_file(parts[-1]) or any(part in DATA_FOLDERS for part in parts[:-1])


def size_text(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


# What the student is told where a whole upload is over the limits: a red team's reference
# code beside a 210 MiB checkpoint or 5,200 dataset images scored 0 with only "archive bomb".
_HAND_IN_LESS = (", or one holding data the course's work does not need: hand in the code, "
                 "answers and report without datasets or checkpoints")
# Files named where an upload is over a limit, the largest first.
LARGEST_NAMED = 3


@dataclass(frozen=True)
class SkippedLink:
    """A symbolic link of an upload, skipped: `where` in the upload ("hw3/answers.yaml"),
    `archive` the zip it is in ("" for a folder upload), `target` as the link says it (None
    where a zip's entry could not be read), `points_to` that target as a path of this machine,
    made absolute without following anything (where it would lead if it were followed: the
    grader's files, another student's upload)."""
    where: str
    archive: str
    target: str | None
    points_to: str | None


T = TypeVar("T")
# What a leave-out pass left out: (path in the upload, size or None for a folder, what it is).
LeftOut = tuple[str, "int | None", str]


class Budget:
    """What one submission has used of its limits so far; with `leave_out`, what was left out
    (`left_out`: (path, size or None for a folder, what it is))."""

    def __init__(self, limits: UnpackLimits, leave_out: bool = False):
        self.limits, self.bytes, self.files, self.listed = limits, 0, 0, 0
        self.leave_out = leave_out
        self.left_out: list[LeftOut] = []
        # Zips unpacked to nothing ("hw3.zip"): named where nothing to grade is found.
        self.empty_archives: list[str] = []
        # Symbolic links skipped: named in the student's report and instructor.md (adv39 F3:
        # only the batch log had said so, and the report said "not handed in").
        self.links: list[SkippedLink] = []
        # The files met, with their sizes: the largest are named where a limit is passed.
        # `hidden_parts`: the leading folders of their paths that are not the student's (a
        # participant's folder of a whole Moodle download).
        self.sizes: list[tuple[str, int]] = []
        self.hidden_parts = 0

    def over(self, what: str, amount: str) -> DataInTheWay:
        """Over a limit: what, by how much, the largest files (a clause of their own, after
        the first: `short_reason` keeps only what was over), and what to do."""
        if self.left_out:
            amount += f" even with {self.left_out_text()} left out"
        return DataInTheWay(f"{what}: {amount}{self.largest_text()}; rejected as a possible "
                            f"archive bomb{_HAND_IN_LESS}")

    def sized(self, parts: Sequence[str], size: int) -> None:
        """A file met on the way (`parts`: its path in the upload), for `largest_text`."""
        self.sizes.append(("/".join(parts[self.hidden_parts:]), size))

    def largest_text(self) -> str:
        """"; largest files: hw3/notes.txt (210.0 MiB), ...": what the student can leave out
        (the message had named no file, only "would unpack to 220264923 bytes")."""
        largest = sorted(self.sizes, key=lambda item: (-item[1], item[0]))[:LARGEST_NAMED]
        if not largest:
            return ""
        return "; largest files: " + ", ".join(f"{where} ({size_text(size)})"
                                               for where, size in largest)

    def add_file(self, what: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise self.over(what, f"more than the limit of {self.limits.max_files} files")

    def add_bytes(self, count: int, what: str) -> None:
        self.bytes += count
        if self.bytes > self.limits.max_total_bytes:
            raise self.over(what, f"more than the limit of {self.limits.max_total_bytes} "
                                  "bytes unpacked")

    def count_listed(self, what: str, count: int = 1) -> None:
        self.listed += count
        if self.listed > self.limits.max_listed:
            raise Rejected(f"{what}: more than {self.limits.max_listed} files and folders; "
                           f"rejected as a possible archive bomb{_HAND_IN_LESS}")

    def skips(self, where: str, size: int | None, kind: str = "data") -> bool:
        """Whether `where` is left out (only in the second, leave-out pass); recorded if so."""
        if not self.leave_out:
            return False
        self.left_out.append((where, size, kind))
        return True

    def left_out_text(self) -> str:
        return left_out_text(self.left_out)

    def check_depth(self, depth: int, what: str) -> None:
        if depth > self.limits.max_depth:
            raise Rejected(f"{what} is nested more than {self.limits.max_depth} folders deep "
                           "(limit); keep the template's layout")


def left_out_text(left_out: list[LeftOut]) -> str:
    """"2 data files (1.2 MiB) and 1 Python environment": what a leave-out pass left out."""
    files = [size for _, size, kind in left_out if kind == "data"]
    folders = sum(kind == "data folder" for _, _, kind in left_out)
    environments = sum(kind == "environment" for _, _, kind in left_out)
    parts = []
    if files:
        parts.append(f"{len(files)} data file{'s' * (len(files) != 1)} ({size_text(sum(files))})")
    if folders:
        parts.append(f"{folders} data folder{'s' * (folders != 1)}")
    if environments:
        parts.append(f"{environments} Python environment{'s' * (environments != 1)}")
    return " and ".join(parts) or "nothing"


def display_name(entry: Path) -> str:
    """The name the student gave the file (Moodle's flat download prefixes it)."""
    match = MOODLE_NAME.match(entry.name)
    return match["rest"] if match and match["rest"] else entry.name


def check_name(name: str, what: str) -> None:
    if len(os.fsencode(name)) > MAX_NAME_BYTES:
        raise Rejected(f"{what}: a name is longer than {MAX_NAME_BYTES} bytes ({name[:60]}...)")


def materialize_entry(entry: Path, dest: Path, budget: Budget, notes: list[str]) -> None:
    """The student's own entry: a folder's contents, or the file itself, go into `dest`;
    zips right there are unpacked (Moodle folders often hold just the student's zip)."""
    if entry.is_symlink():
        # An entry of SUBMISSIONS itself (a link the instructor made to a student's folder):
        # not followed (it could point anywhere), and not the student's fault either.
        raise NeedsPerson(f"{display_name(entry)} is a symbolic link in the submissions folder "
                          f"(to {os.readlink(entry)}); links are not followed: put a copy of "
                          "the upload there instead")
    refuse_specials(entry)
    children = _children(entry, budget, "") if entry.is_dir() else [entry]
    for child in children:
        _materialize(child, dest, budget, notes, unpack_zips=True, depth=1)


def _children(folder: Path, budget: Budget, where: str) -> list[Path]:
    """A folder's entries to unpack: in the leave-out pass, an environment's own parts are
    left out (never walked: the runs hide an environment anyway), the rest kept."""
    children = sorted(folder.iterdir())
    if not budget.leave_out or not is_environment(folder):
        return children
    budget.skips(where or "./", None, "environment")
    return [child for child in children if child.name not in ENVIRONMENT_PARTS]


def refuse_specials(entry: Path) -> int:
    """The entry's mode; Rejected for a FIFO, a device or a socket (never opened: reading a
    FIFO would block the batch)."""
    mode = entry.lstat().st_mode
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise Rejected(f"{entry.name} is not a regular file; submissions may only hold files")
    return mode


def _materialize(entry: Path, dest: Path, budget: Budget, notes: list[str], unpack_zips: bool,
                 depth: int, within: str = "") -> None:
    if entry.name in JUNK_NAMES:
        return
    mode = refuse_specials(entry)
    name = display_name(entry)
    where = f"{within}{name}"
    if stat.S_ISLNK(mode):
        target = os.readlink(entry)
        notes.append(f"skipped {where}: a symbolic link (to {target}); {LINKS_NOT_FOLLOWED}")
        budget.links.append(SkippedLink(where, "", target,
                                        os.path.normpath(os.path.join(entry.parent, target))))
        return
    check_name(name, name)
    budget.check_depth(depth, name)
    budget.count_listed(name)
    if stat.S_ISDIR(mode) and budget.leave_out and name in DATA_FOLDERS:
        budget.skips(f"{where}/", None, "data folder")
        return    # never walked
    if stat.S_ISDIR(mode):
        budget.add_file(name)
        target = dest / name
        target.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(target, DIR_MODE)
        # Depth-first without recursion past the limit: the depth is checked above, before
        # the next level is opened.
        for child in _children(entry, budget, f"{where}/"):
            _materialize(child, target, budget, notes, unpack_zips=False, depth=depth + 1,
                         within=f"{where}/")
    elif unpack_zips and name.lower().endswith(".zip"):
        # Unpacked into a folder named after the archive (Moodle's flat `..._file_.zip` has no
        # name left once the prefix is gone); grader/batch/layout.py decides where the root is.
        count = extract_zip(entry, free_name(dest / (name[:-4].strip() or "archive")), budget,
                            notes, where=where)
        notes.append(f"unpacked {name} ({count} files)")
        if not count:
            budget.empty_archives.append(where)
    elif budget.leave_out and is_data_file(name):
        budget.skips(where, entry.lstat().st_size)
    else:
        budget.add_file(name)
        budget.sized(where.split("/"), entry.lstat().st_size)
        _copy_counted(entry, dest / name, budget)


def free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def _copy_counted(source: Path, target: Path, budget: Budget) -> None:
    with open(source, "rb") as src, _create(target) as dst:
        while chunk := src.read(CHUNK):
            budget.add_bytes(len(chunk), source.name)
            dst.write(chunk)


def _create(target: Path):
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    os.fchmod(fd, FILE_MODE)    # whatever the umask: the sandbox's user reads it
    return os.fdopen(fd, "wb")


def is_link_entry(info: zipfile.ZipInfo) -> bool:
    """A symbolic link stored as such (Unix mode in the entry's external attributes)."""
    return stat.S_IFMT(info.external_attr >> 16) == stat.S_IFLNK


UNICODE_PATH_EXTRA = 0x7075   # Info-ZIP's Unicode Path extra field
UTF8_FLAG = 0x800


def zip_entry_name(info: zipfile.ZipInfo) -> str:
    """The entry's name as its maker meant it. An entry without the UTF-8 flag is read by
    zipfile as CP437, but Info-ZIP and most tools write the system's UTF-8 bytes there
    (`Kodutöö 3/` had become `Kodut├╢├╢ 3/`): its Unicode Path extra field (0x7075) is used
    where its checksum matches the stored name, else the stored bytes where they are valid
    UTF-8, else the CP437 reading."""
    if info.flag_bits & UTF8_FLAG:
        return info.filename
    try:
        raw = info.orig_filename.encode("cp437")
    except UnicodeEncodeError:      # read with another metadata_encoding: keep it
        return info.filename
    extra, at = info.extra or b"", 0
    while at + 4 <= len(extra):
        tag, size = struct.unpack("<HH", extra[at:at + 4])
        data = extra[at + 4:at + 4 + size]
        if tag == UNICODE_PATH_EXTRA and len(data) >= 5 and data[0] == 1 \
                and struct.unpack("<I", data[1:5])[0] == zlib.crc32(raw):
            try:
                return _as_zipfile_names(info, data[5:].decode("utf-8"))
            except UnicodeDecodeError:
                break
        at += 4 + size
    if raw.isascii():
        return info.filename
    try:
        return _as_zipfile_names(info, raw.decode("utf-8"))
    except UnicodeDecodeError:
        return info.filename


def _as_zipfile_names(info: zipfile.ZipInfo, name: str) -> str:
    """`name` as zipfile would have made it of the stored one (a folder's trailing "/")."""
    if info.filename.endswith("/") and not name.endswith("/"):
        name += "/"
    return name


def check_zip_entry(info: zipfile.ZipInfo, archive: str, limits: UnpackLimits | None = None) -> list[str]:
    """The safe relative path parts of one entry; Rejected for anything unsafe (its compression
    is `check_method`'s, once what may be left out is known). A symbolic link passes once its
    path is safe: the caller skips it (`is_link_entry`), never writes it."""
    limits = limits or UnpackLimits()
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise LeavesTheZip(archive, [(info.filename, ABSOLUTE)])
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise LeavesTheZip(archive, [(info.filename, DOT_DOT)])
    if len(parts) > limits.max_depth:
        raise Rejected(f"{archive}: entry '{'/'.join(parts[:3])}/...' is nested {len(parts)} "
                       f"folders deep, more than the limit of {limits.max_depth}; rejected")
    if len(os.fsencode(name)) > MAX_PATH_BYTES:
        raise Rejected(f"{archive}: entry '{info.filename[:80]}...' has a path longer than "
                       f"{MAX_PATH_BYTES} bytes; rejected")
    for part in parts:
        check_name(part, archive)
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        return parts     # its target is never read: how it is compressed does not matter
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise Rejected(f"{archive}: entry '{info.filename}' is not a regular file; rejected")
    if info.flag_bits & 0x1:
        # No verdict on the work (a zip tool that encrypts by default, a password set by
        # mistake): no grade, for a person, as a .rar gets; it had been a 0 in Moodle (adv39 F6).
        raise NeedsPerson(f"{archive} is password-protected (entry '{info.filename}' is "
                          "encrypted): the grader cannot unpack it, so it gets no grade (never a "
                          "0); a person should look (ask the student to upload it without a "
                          "password)")
    return parts


DOT_DOT, ABSOLUTE = "../", "an absolute path"
# Entries and links named where a zip's entries leave it, at most.
OUT_NAMED = 5
# The example command of ZIP_THE_FOLDER while the upload's assignment is unknown (its entries
# are checked before the batch chooses what to grade it for): `with_own_example` names it.
FOLDER_EXAMPLE = "`zip -r FOLDER.zip FOLDER`"
# What to do about a zip whose paths leave it (made from the folder above, with `../` in the
# names, or by a hand-written script): said with every refusal of one (adv45 F5).
ZIP_THE_FOLDER = ("rejected: zip the folder itself, from the folder that holds it (e.g. "
                  f"{FOLDER_EXAMPLE}, or the file manager's 'Compress' on the folder), so that "
                  "no path in it leaves it")


def with_own_example(reason: str, assignments: Sequence[str]) -> str:
    """`reason` with ZIP_THE_FOLDER's example named for the one assignment the upload is graded
    for (`zip -r practical4.zip practical4`); FOLDER stays where it is graded for several or
    none. The example had said hw3 to every student, whatever they had handed in."""
    if len(assignments) != 1:
        return reason
    own = assignments[0]
    return reason.replace(FOLDER_EXAMPLE, f"`zip -r {own}.zip {own}`")


class LeavesTheZip(Rejected):
    """Entries of a zip whose paths leave it ((name, DOT_DOT or ABSOLUTE)), and the links in it
    that point out of it ((path, target)): all of them named, with what to do."""

    def __init__(self, archive: str, entries: list[tuple[str, str]],
                 links: Sequence[tuple[str, str]] = ()):
        self.archive, self.entries, self.links = archive, list(entries), list(links)
        super().__init__(self.said())

    def said(self) -> str:
        if len(self.entries) == 1:
            name, why = self.entries[0]
            what = (f"entry '{name}' points outside the archive (../)" if why == DOT_DOT
                    else f"entry '{name}' has an absolute path")
        else:
            what = (f"{len(self.entries)} entries leave the archive: "
                    + ", ".join(f"'{name}' ({why})" for name, why in self.entries[:OUT_NAMED])
                    + (f" and {len(self.entries) - OUT_NAMED} more"
                       if len(self.entries) > OUT_NAMED else ""))
        links = ""
        if self.links:
            links = ("; it also holds links out of it (never followed): "
                     + ", ".join(f"{where} (to {target})"
                                 for where, target in self.links[:OUT_NAMED])
                     + (f" and {len(self.links) - OUT_NAMED} more"
                        if len(self.links) > OUT_NAMED else ""))
        return f"{self.archive}: {what}{links}; {ZIP_THE_FOLDER}"


def _link_leaves(parts: Sequence[str], target: str) -> bool:
    """Whether a link at `parts` in a zip, to `target`, points out of the zip."""
    if target.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", target):
        return True
    return os.path.normpath(os.path.join("top", *parts[:-1], target)).split(os.sep)[0] != "top"


def check_method(info: zipfile.ZipInfo, archive: str, unneeded: bool) -> None:
    """Rejected where Python cannot inflate the entry (DataInTheWay for a data file or a part
    of an environment, `unneeded`: the upload may be graded without it)."""
    if info.compress_type not in SUPPORTED_METHODS and not info.is_dir():
        method = KNOWN_METHODS.get(info.compress_type, "an unknown method")
        hint = (" (what Windows Explorer's 'Send to > Compressed folder' writes for large files)"
                if info.compress_type == 9 else "")
        kind = DataInTheWay if unneeded else Rejected
        raise kind(f"{archive}: entry '{info.filename}' is compressed with {method} (zip "
                   f"method {info.compress_type}){hint}, which the grader cannot unpack; zip "
                   "the folder again with ordinary Deflate (`zip -r`, 7-Zip's 'Deflate', "
                   "or macOS 'Compress')")


def zip_directory_size(archive: Path) -> tuple[int, int, int] | None:
    """(entries the end record claims, bytes of the central directory, where zipfile will read
    it) from the zip's end record, without parsing the directory; None where no end record is
    found (not a zip). zipfile reads the directory's bytes just before the end record (and the
    zip64 records before it), whatever offset the record states, so that is where it counts."""
    with open(archive, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        tail_length = min(size, 22 + 65535)        # the record and the longest comment
        handle.seek(size - tail_length)
        tail = handle.read(tail_length)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            return None
        record_at = size - tail_length + at
        entries, directory_bytes = struct.unpack("<HI", tail[at + 10:at + 16])
        end = record_at
        # zip64 as zipfile sees it: a locator right before the end record, its record before it.
        if record_at >= 20 + 56:
            handle.seek(record_at - 20 - 56)
            zip64 = handle.read(76)
            if zip64[56:60] == b"PK\x06\x07" and zip64[:4] == b"PK\x06\x06":
                entries, directory_bytes = struct.unpack("<QQ", zip64[32:48])
                end = record_at - 76
        return entries, directory_bytes, end - directory_bytes


# What one entry of a central directory can honestly take: 46 bytes, its name, and a little
# room for the extra fields tools add (times, zip64 sizes, Unicode names).
DIRECTORY_BYTES_PER_ENTRY = 46 + MAX_NAME_BYTES + 1024


def directory_entries(archive: Path, start: int, directory_bytes: int) -> int:
    """How many entries the central directory really holds, counted by their signatures (an
    end record can claim one entry over a directory of a million): zipfile follows the
    directory's bytes, not the claimed count."""
    if start < 0:
        return 0   # zipfile finds no directory there either ("Bad offset")
    with open(archive, "rb") as handle:
        handle.seek(start)
        return handle.read(directory_bytes).count(b"PK\x01\x02")


# What is said of an archive that is damaged: no verdict on the work (NeedsPerson).
_DAMAGED = ('nothing in it can be graded, so it gets no grade (never a 0): a person should look (download it again from Moodle, or ask the student to upload it again)')
# What a file named .zip is when it is not one: students rename archives the grader cannot
# unpack (the signature at its start, where the format has one there).
ARCHIVE_SIGNATURES = ((b"Rar!\x1a\x07", "a RAR archive"), (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
                      (b"\x1f\x8b", "a gzip (.gz, .tar.gz) archive"), (b"BZh", "a bzip2 archive"),
                      (b"\xfd7zXZ\x00", "an xz archive"), (b"\x28\xb5\x2f\xfd", "a Zstandard archive"),
                      (b"MSCF", "a Windows cabinet (.cab)"), (b"%PDF", "a PDF document"))
ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
# Archives the batch does not unpack, by how their names end (the longer ending first), and
# what a person is told each is: "it holds hw3.rar" alone had not said what is wrong with it.
ARCHIVE_KINDS = {".tar.gz": "a gzip-compressed tar archive", ".tar.bz2": "a bzip2-compressed tar "
                 "archive", ".tar.xz": "an xz-compressed tar archive", ".tgz": "a gzip-compressed "
                 "tar archive", ".tbz2": "a bzip2-compressed tar archive", ".txz": "an "
                 "xz-compressed tar archive", ".tar": "a tar archive", ".7z": "a 7z archive",
                 ".rar": "a RAR archive", ".gz": "a gzip archive", ".bz2": "a bzip2 archive",
                 ".xz": "an xz archive"}


def archive_kind(name: str) -> str | None:
    """What an archive the batch does not unpack is, by its name ("a RAR archive"); None."""
    return next((kind for end, kind in ARCHIVE_KINDS.items() if name.lower().endswith(end)),
                None)


def not_a_zip(archive: Path) -> str | None:
    """What `archive` is where it is not a zip at all (no zip signature at its start): "a RAR
    archive", "a tar archive", "a file of another kind"; None for a zip, however damaged, and
    for an empty file (nothing a person could unpack either: the student's to hand in again)."""
    with open(archive, "rb") as handle:
        head = handle.read(512)
    if not head or head.startswith(ZIP_SIGNATURES):
        return None
    for signature, kind in ARCHIVE_SIGNATURES:
        if head.startswith(signature):
            return kind
    if head[257:262] == b"ustar":
        return "a tar archive"
    return "a file of another kind"


def top_name(entry_name: str) -> str:
    """The first part of a zip entry's name (its top folder, or the file at the top)."""
    return entry_name.replace("\\", "/").split("/", 1)[0]


def extract_zip(archive: Path, dest: Path, budget: Budget, notes: list[str] | None = None,
                where: str | None = None) -> int:
    """Unpack `archive` into `dest` after checking every entry; returns the number of files.
    Symbolic links in it are skipped, each said in `notes` and kept in `budget.links` (`where`:
    the archive as the upload names it, by default its own name).

    All entries are checked before anything is written, so a rejected archive leaves nothing
    half-unpacked. Sizes are counted on the bytes actually inflated, not on the headers."""
    label = display_name(archive)
    with _checked_zip(archive, label, budget.limits) as zf:
        # Its links' relative targets are read as if the zip were the folder it unpacks to.
        return _unpack_entries(zf, _named_entries(zf), dest, budget, label, notes,
                               (where or label, archive))


def extract_each(archive: Path, dest: Path, limits: UnpackLimits, names: Sequence[str],
                 links: dict[str, list[SkippedLink]] | None = None,
                 left_out: dict[str, tuple[DataInTheWay, list[LeftOut]]] | None = None
                 ) -> dict[str, Rejected]:
    """Each top-level name of `archive` (a participant's folder of a whole Moodle download)
    unpacked into dest/<name> as an upload of its own, within one upload's `limits` and a
    budget of its own; returns why each one refused was refused. The archive's directory is
    read once for all of them (once per participant had made a class of 300 quadratic), within
    `limits` times their number. The symbolic links skipped go into `links` by name, each
    where it is in that participant's folder, as if the download had been unzipped by hand
    (they had been said nowhere: the folder then held no link to report). A participant's
    folder over the limits is unpacked again without its data, as a folder upload is
    (`unpacked_leaving_out_data`), and why and what was left out go into `left_out` by name
    (it had been rejected as "a possible archive bomb" and scored 0, adv45 F1)."""
    label = display_name(archive)
    whole = dataclasses.replace(limits, max_listed=limits.max_listed * max(len(names), 1))
    refused: dict[str, Rejected] = {}
    try:
        zf = _checked_zip(archive, label, whole)
    except Rejected as problem:
        return {name: problem for name in names}
    with zf:
        by_name: dict[str, list[zipfile.ZipInfo]] = {}
        for info in _named_entries(zf):
            by_name.setdefault(top_name(info.filename), []).append(info)
        for name in names:
            budgets: list[Budget] = []

            def unpack(leave_out: bool, entries=by_name.get(name, [])) -> Budget:
                budgets.append(Budget(limits, leave_out))
                budgets[-1].hidden_parts = 1     # the participant's folder
                _unpack_entries(zf, entries, dest, budgets[-1], label, origin=("", dest))
                return budgets[-1]

            try:
                budget, whole = unpacked_leaving_out_data(
                    unpack, lambda name=name: _remove(dest / name))
                if whole is not None and left_out is not None:
                    left_out[name] = (whole, [(_in_own_folder(where), size, kind)
                                              for where, size, kind in budget.left_out])
            except Rejected as problem:
                refused[name] = problem
            if links is not None and budgets[-1].links:
                links[name] = [dataclasses.replace(link, where=link.where.split("/", 1)[-1])
                               for link in budgets[-1].links]
    return refused


def _remove(path: Path) -> None:
    """What a participant's first pass wrote: its folder, or its one file in Moodle's flat
    layout (rmtree leaves a file)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _in_own_folder(where: str) -> str:
    """A path of a whole download's entry as its participant's folder has it (the file itself
    as the student named it in Moodle's flat layout; "./" for the participant's folder)."""
    if "/" in where.rstrip("/"):
        return where.split("/", 1)[1]
    return "./" if where.endswith("/") else display_name(Path(where))


def unpacked_leaving_out_data(unpack: Callable[[bool], T], reset: Callable[[], None]
                              ) -> tuple[T, DataInTheWay | None]:
    """The one rule for an upload over the limits, however it arrives (a folder, a zip, a
    participant's folder of a whole Moodle download): `unpack(False)` whole; where that is
    DataInTheWay (too big, or a checkpoint Python cannot inflate), `reset()` and `unpack(True)`
    once more leaving out what no check reads, before a zero for the code beside it. Returns
    what `unpack` returned and why the whole upload was refused (None where it was not)."""
    try:
        return unpack(False), None
    except DataInTheWay as whole:
        reset()
        return unpack(True), whole


def _checked_zip(archive: Path, label: str, limits: UnpackLimits) -> zipfile.ZipFile:
    """`archive` opened once its end record and directory are within `limits` (Rejected, or
    NeedsPerson for a damaged one, otherwise)."""
    try:
        directory = zip_directory_size(archive)
        kind = not_a_zip(archive) if directory is None else None
    except OSError as exc:
        raise Rejected(f"{label} could not be read ({exc.strerror or exc})") from None
    if kind is not None:
        # Not the student's work graded as nothing (a 0): unpacked by hand, it may be complete.
        raise NeedsPerson(f"{label} is not a readable zip file: it is {kind} named .zip, which "
                          "the grader cannot unpack; a person should look at it (unpack it by "
                          "hand, or ask the student for a .zip)")
    if directory is None:
        # Cut short (an upload or a download that did not finish): the student's work may be
        # whole on their machine; a 0 for it had been uploaded to Moodle.
        raise NeedsPerson(f"{label} is not a readable zip file: it is damaged, cut short (no "
                          f"end-of-archive record); {_DAMAGED}")
    entries_declared, directory_bytes, start = directory
    # Checked before zipfile builds an object per entry: a directory of millions of entries
    # would cost the grader gigabytes before any other limit is looked at. The end record's
    # count is the archive's claim; the directory's size and its signatures are what zipfile
    # will read.
    most = limits.max_listed
    if entries_declared > most:
        raise Rejected(f"{label}: {entries_declared} entries, more than the limit of {most} "
                       "files and folders; rejected as a possible archive bomb" + _HAND_IN_LESS)
    if directory_bytes > most * DIRECTORY_BYTES_PER_ENTRY:
        raise Rejected(f"{label}: a directory of {directory_bytes} bytes, room for more entries "
                       f"than the limit of {most} files and folders; rejected as a possible "
                       "archive bomb" + _HAND_IN_LESS)
    try:
        entries_found = directory_entries(archive, start, directory_bytes)
    except (OSError, ValueError, OverflowError) as exc:
        raise Rejected(f"{label} could not be read ({exc})") from None
    if entries_found > most:
        raise Rejected(f"{label}: {entries_found} entries in its directory (its end record says "
                       f"{entries_declared}), more than the limit of {most} files and folders; "
                       "rejected as a possible archive bomb" + _HAND_IN_LESS)
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise NeedsPerson(f"{label} is not a readable zip file: it is damaged ({exc}); "
                          f"{_DAMAGED}") from None
    return zf


# Said of every link skipped: the file it names is not graded (a link named answers.yaml had
# been said to be something "nothing graded needs").
LINKS_NOT_FOLLOWED = ("links are never followed, so the file it names is not graded: hand in "
                      "the file itself")
# The most of a zip's link entry read: its data is the target's path, nothing more.
MAX_LINK_BYTES = 4096


def _link_target(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> str | None:
    """The path a zip's link entry names (its data: what `zip -y` stores), never followed or
    created; None where it cannot be read within a path's size."""
    if info.file_size > MAX_LINK_BYTES or info.compress_size > MAX_LINK_BYTES \
            or info.compress_type not in SUPPORTED_METHODS or info.flag_bits & 0x1:
        return None
    try:
        with zf.open(info) as handle:
            data = handle.read(MAX_LINK_BYTES + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, NotImplementedError,
            RuntimeError):
        return None
    if len(data) > MAX_LINK_BYTES or b"\0" in data:
        return None
    return data.decode("utf-8", "surrogateescape")


def _named_entries(zf: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    infos = zf.infolist()
    for info in infos:
        info.filename = zip_entry_name(info)   # zipfile opens it by orig_filename
    return infos


def _unpack_entries(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], dest: Path,
                    budget: Budget, label: str, notes: list[str] | None = None,
                    origin: tuple[str, Path] | None = None) -> int:
    """`infos` of `zf` (named by _named_entries) unpacked into `dest`, all checked first.
    `origin`: the archive as the upload names it and the folder it is in, where its links are
    said."""
    limits = budget.limits
    entries, leaving, links_out = [], [], []
    for info in infos:
        try:
            parts = check_zip_entry(info, label, limits)
        except LeavesTheZip as out:
            # Each one named, not only the first (adv45 F5): checked on, nothing written.
            leaving += out.entries
            continue
        if not parts or any(p in JUNK_NAMES for p in parts):
            continue
        if is_link_entry(info):
            target = _link_target(zf, info)
            if target is not None and _link_leaves(parts, target):
                links_out.append(("/".join(parts), target))
            if notes is not None:
                notes.append(f"skipped {'/'.join(parts)} in {label}: a symbolic link"
                             + (f" (to {target})" if target is not None else "")
                             + f"; {LINKS_NOT_FOLLOWED}")
            if origin is not None:
                budget.links.append(SkippedLink(
                    "/".join(parts), origin[0], target, None if target is None else
                    os.path.normpath(os.path.join(origin[1], *parts[:-1], target))))
            continue
        entries.append((info, parts))
    if leaving:
        raise LeavesTheZip(label, leaving, links_out)
    budget.count_listed(label, len(entries))
    environments = _environment_parts(entries)
    if budget.leave_out:
        entries = _without_data(entries, environments, budget)
    for info, parts in entries:
        check_method(info, label, _is_unneeded(parts, environments))
    files = sum(not info.is_dir() for info, _ in entries)
    declared = sum(info.file_size for info, _ in entries)
    for info, parts in entries:
        if not info.is_dir():
            budget.sized(parts, info.file_size)
    if files + budget.files > limits.max_files:
        raise budget.over(label, f"{files} files, more than the limit of {limits.max_files} "
                                 "files")
    if declared + budget.bytes > limits.max_total_bytes:
        raise budget.over(label, f"would unpack to {declared} bytes, more than the limit "
                                 f"of {limits.max_total_bytes}")
    dest.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    top = dest.resolve()
    count = 0
    for info, parts in entries:
        target = dest.joinpath(*parts)
        if not target.resolve().is_relative_to(top):    # belt and braces after the checks
            raise Rejected(f"{label}: entry '{info.filename}' points outside the archive; rejected")
        if info.is_dir():
            _make_folders(dest, parts)
            continue
        budget.add_file(label)
        _make_folders(dest, parts[:-1])
        try:
            with zf.open(info) as src, _create(target) as dst:
                while chunk := src.read(CHUNK):
                    budget.add_bytes(len(chunk), label)
                    dst.write(chunk)
        except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, NotImplementedError,
                RuntimeError) as exc:
            # A damaged checkpoint need not cost the code beside it its grade.
            if _is_unneeded(parts, environments):
                raise DataInTheWay(f"{label}: entry '{info.filename}' is damaged ({exc})") from None
            raise NeedsPerson(f"{label} is damaged: its entry '{info.filename}' cannot be "
                              f"unpacked ({exc}); {_DAMAGED}") from None
        count += 1
    return count


def _environment_parts(entries) -> set[str]:
    """The folders of a zip that hold a Python environment ("" for the zip's top), as paths."""
    folders = set()
    for _, parts in entries:
        for at, part in enumerate(parts):
            if part in ENVIRONMENT_MARKS and (at < len(parts) - 1 or part == "pyvenv.cfg"):
                folders.add("/".join(parts[:at]))
                break
    return folders


def _environment_of(parts, environments: set[str]) -> str | None:
    """The environment folder whose own part (ENVIRONMENT_PARTS) holds the entry, or None."""
    if not environments:
        return None
    # Each folder above the entry looked up once: linear in its depth, whatever the number of
    # environments (a red team's 25,000 of them had taken 15 minutes compared pairwise).
    path, end = "/".join(parts), -1
    for part in parts:
        if part in ENVIRONMENT_PARTS and path[:max(end, 0)] in environments:
            return path[:max(end, 0)]
        end += len(part) + 1
    return None


def _is_unneeded(parts, environments) -> bool:
    """Whether a damaged entry, or one Python cannot inflate, may be left out (DataInTheWay)."""
    return is_data_path(parts) or _environment_of(parts, environments) is not None


def _without_data(entries: list[tuple[zipfile.ZipInfo, list[str]]], environments,
                  budget: Budget):
    """`entries` less the Python environments' own parts and the data files in them, each
    recorded in `budget` (an environment once, as its folder)."""
    kept, seen, said = [], set(), set()
    for info, parts in entries:
        home = _environment_of(parts, environments)
        if home is not None:
            if home not in said:
                said.add(home)
                budget.skips(home + "/" if home else "./", None, "environment")
            continue
        if not info.is_dir() and is_data_path(parts):
            folder = next((at for at, part in enumerate(parts[:-1]) if part in DATA_FOLDERS),
                          None)
            if folder is None:
                budget.skips("/".join(parts), info.file_size)
            elif tuple(parts[:folder + 1]) not in seen:
                seen.add(tuple(parts[:folder + 1]))
                budget.skips("/".join(parts[:folder + 1]) + "/", None, "data folder")
            continue
        kept.append((info, parts))
    return kept


def _make_folders(top: Path, parts: list[str]) -> None:
    folder = top
    for part in parts:
        folder = folder / part
        if not folder.is_dir():
            folder.mkdir(mode=DIR_MODE)
            os.chmod(folder, DIR_MODE)
