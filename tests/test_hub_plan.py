"""The hub's plan and the configuration made from it, without starting anything (fast:
``make quick``). tests/test_hub.py runs the hub itself (``make hub``)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import ROOT
from test_hub import CLOSE_COMMAND, HUB_COMMAND, RELEASE_COMMANDS
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from autograder.hub import config, exposure, launch, plan, settings
from autograder.hub.plan import PlanError

EXAMPLE = ROOT / "autograder" / "hub" / "example-hub.toml"
# Unix users every Debian has: the graders of the plans below (their services run as them).
GRADERS = ("daemon", "bin")


def readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Run it on a JupyterHub\n(.*?)(?=^## )", text, re.M | re.S)
    assert match, "README has no section 'Run it on a JupyterHub'"
    return match.group(1)


def test_readme_shows_the_commands_the_hub_tests_run():
    section = readme_section()
    for line in (HUB_COMMAND, CLOSE_COMMAND, *RELEASE_COMMANDS):
        assert line in section, line
    assert "autograder/hub/example-hub.toml" in section


def checkout(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "nbgrader_config.py").write_text("c = get_config()\n")
    return path


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hub.toml"
    path.write_text(text)
    return path


COURSES = f"""
[[courses]]
id = "fall"
folder = "fall"
grader = "{GRADERS[0]}"
instructors = ["barbara"]
students = ["ada", "grace"]

[[courses]]
id = "spring"
folder = "spring"
grader = "{GRADERS[1]}"
instructors = ["edsger"]
students = ["alan"]
"""
GOOD = f"""
[hub]
port = 8123
state = "state"
exchange_root = "exchange"

[authenticator]
kind = "dummy"
password = "secret"

[users]
students = ["ada", "grace", "alan"]
{COURSES}"""


@pytest.fixture
def good(tmp_path) -> Path:
    checkout(tmp_path / "fall")
    checkout(tmp_path / "spring")
    return write(tmp_path, GOOD)


def anyone(name: str) -> bool:
    return True


def test_the_example_plan_is_well_formed_and_names_its_missing_folders():
    example = plan.load(EXAMPLE)
    assert [c.id for c in example.courses] == ["autograd-fall", "autograd-spring"]
    assert example.authenticator == "pam"
    assert plan.problems(example, anyone) == [
        "course 'autograd-fall': no folder /srv/courses/autograd-fall",
        "course 'autograd-spring': no folder /srv/courses/autograd-spring",
    ]


def test_a_good_plan_has_no_problems(good):
    checked = plan.checked(good, anyone)
    assert checked.users() == {"barbara", "ada", "grace", "edsger", "alan"}
    assert [c.id for c in checked.courses_of("ada")] == ["fall"]
    assert checked.exchange_root == good.parent / "exchange"


BAD = {
    "a course id used twice": (
        ('id = "spring"', 'id = "fall"'),
        "course id 'fall' is used twice",
    ),
    "a missing folder": (('folder = "spring"', 'folder = "nowhere"'), "no folder"),
    "a student in no course": (
        ('students = ["ada", "grace", "alan"]', 'students = ["ada", "grace", "alan", "eve"]'),
        "users: student eve is in no course",
    ),
    "an unknown exchange": (
        ('students = ["alan"]', 'students = ["alan"]\nexchange = "carrier-pigeon"'),
        "course 'spring': unknown exchange 'carrier-pigeon'",
    ),
    "an unknown authenticator": (('kind = "dummy"', 'kind = "saml"'), "unknown kind 'saml'"),
    "the dummy authenticator without its password": (
        ('password = "secret"', ""),
        "authenticator dummy: no password",
    ),
    "the dummy authenticator off this machine": (
        ("port = 8123", 'port = 8123\nip = "0.0.0.0"'),
        "authenticator dummy: only on 127.0.0.1",
    ),
    "a service of a course that does not exist": (
        ("[users]", '[[services]]\nname = "x"\ncommand = ["true"]\ncourse = "winter"\n[users]'),
        "service 'x': unknown course id 'winter'",
    ),
    "an external service without its token": (
        ("[users]", '[[services]]\nname = "lms"\nurl = "http://127.0.0.1:9000"\n[users]'),
        "service 'lms': no api token (api_token_file or api_token_env)",
    ),
    "a service named like a course": (
        ("[users]", '[[services]]\nname = "fall"\ncommand = ["true"]\n[users]'),
        "service name 'fall' is used twice",
    ),
    "a grader who logs in too": (
        ('students = ["alan"]', f'students = ["alan", "{GRADERS[0]}"]'),
        "is a course's grader account and cannot log in too",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_plan_gets_one_line_naming_the_problem(tmp_path, case):
    (old, new), expected = BAD[case]
    checkout(tmp_path / "fall")
    checkout(tmp_path / "spring")
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(PlanError) as error:
        plan.checked(path, anyone)
    message = str(error.value)
    assert expected in message and "\n" not in message, message
    assert message.startswith("hub.toml: ")


def test_an_unknown_unix_user_is_named(good):
    with pytest.raises(PlanError, match=r"course 'fall': unknown user ada \(no such unix user\)"):
        plan.checked(good, lambda name: name != "ada")


def test_a_plan_that_is_not_toml_is_named(tmp_path):
    with pytest.raises(PlanError, match=r"hub\.toml: not TOML"):
        plan.load(write(tmp_path, "[hub\n"))


def configured(path: Path) -> tuple[Config, plan.Plan]:
    c = Config()
    checked = plan.checked(path, anyone)
    config.configure(c, checked)
    return c, checked


def test_groups_and_roles_give_each_course_its_students_and_formgrader(good):
    c, _ = configured(good)
    groups = c.JupyterHub.load_groups
    assert groups["nbgrader-fall"] == ["ada", "barbara", "grace"]
    assert groups["formgrade-fall"] == ["barbara"]
    assert groups["formgrade-spring"] == ["edsger"]
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    assert roles["formgrade-fall"]["scopes"] == ["access:services!service=fall"]
    assert roles["formgrade-fall"]["groups"] == ["formgrade-fall"]
    assert "access:services" not in str(roles["nbgrader-fall"]["scopes"])
    assert roles["server"]["scopes"] == ["inherit"]  # JupyterHubAuthPlugin reads the groups
    assert c.Authenticator.allowed_users == {"barbara", "ada", "grace", "edsger", "alan"}
    assert c.JupyterHub.authenticator_class == "dummy"


def test_each_course_has_a_formgrader_and_a_watch_service_as_its_grader(good):
    c, _ = configured(good)
    services = {s["name"]: s for s in c.JupyterHub.services}
    assert set(services) == {"fall", "watch-fall", "spring", "watch-spring"}
    watch = services["watch-fall"]
    assert watch["command"][-3:] == ["watch", "--course", str(good.parent / "fall")]
    for name in ("fall", "watch-fall"):
        entry = services[name]
        as_grader = entry.get("user") == GRADERS[0] or f"USER={GRADERS[0]}" in entry["command"]
        assert as_grader, entry
        assert entry["cwd"] == str(good.parent / "fall")
    assert services["fall"]["url"].startswith("http://127.0.0.1:")
    assert c.JupyterHub.ip == "127.0.0.1" and c.JupyterHub.port == 8123
    assert c.Spawner.start_timeout >= 120


def test_students_get_the_assignments_list_and_validate_and_no_instructor_tools(good, tmp_path):
    checked = plan.checked(good, anyone)
    settings.write_all(checked)
    student = settings.user_folder(checked, "ada")
    teacher = settings.user_folder(checked, "barbara")
    assert student != teacher

    def read(folder: Path, name: str) -> dict:
        return json.loads((folder / name).read_text())

    off = read(student, "labconfig/page_config.json")["disabledExtensions"]
    assert off["@jupyter/nbgrader:formgrader"] and off["@jupyter/nbgrader:create-assignment"]
    assert "@jupyter/nbgrader:assignment-list" not in off
    assert "@jupyter/nbgrader:validate-assignment" not in off
    ext = read(student, "jupyter_server_config.json")["ServerApp"]["jpserver_extensions"]
    assert ext["nbgrader.server_extensions.assignment_list"] is True
    assert ext["nbgrader.server_extensions.formgrader"] is False
    assert ext["nbgrader.server_extensions.course_list"] is False
    grader = read(settings.folder(checked, "grader"), "jupyter_server_config.json")
    assert grader["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"]
    csp = grader["ServerApp"]["tornado_settings"]["headers"]["Content-Security-Policy"]
    assert csp == "frame-ancestors 'self'"  # the Formgrader tab frames the formgrader
    teacher_ext = read(teacher, "jupyter_server_config.json")["ServerApp"]["jpserver_extensions"]
    assert teacher_ext["nbgrader.server_extensions.course_list"] is True
    assert teacher_ext["nbgrader.server_extensions.formgrader"] is False
    nbgrader = read(student, "nbgrader_config.json")
    assert nbgrader["Exchange"] == {
        "root": str(good.parent / "exchange"),
        "path_includes_course": True,
    }
    assert nbgrader["Authenticator"]["plugin_class"] == "nbgrader.auth.JupyterHubAuthPlugin"


def test_the_course_folder_takes_its_course_id_and_exchange_from_the_hub(good, tmp_path):
    """nbgrader_config.py loads nbgrader_config_hub.py last: nbgrader commands, the
    formgrader and watch in the folder all read the plan's course id."""
    checked = plan.checked(good, anyone)
    course = tmp_path / "copy"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    before = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    assert before.CourseDirectory.course_id == "autograd-from-scratch"
    text = launch.course_settings(checked, checked.course("spring"))
    (course / launch.COURSE_SETTINGS).write_text(text)
    after = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    assert after.CourseDirectory.course_id == "spring"
    assert after.Exchange.root == str(good.parent / "exchange")
    assert after.Exchange.path_includes_course is True
    spring = checked.course("spring")  # watch takes only the course's people's submissions
    assert after.Watch.students == sorted(spring.members)


def test_hub_check_lists_every_problem_one_line_each(tmp_path, capsys):
    from autograder.__main__ import main

    path = write(tmp_path, GOOD.replace('kind = "dummy"', 'kind = "saml"'))
    assert main(["hub", "--plan", str(path), "--check"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert any("unknown kind 'saml'" in line for line in lines), lines
    assert any("course 'fall': no folder" in line for line in lines), lines
    assert all(line.startswith("hub.toml: ") for line in lines), lines


# ---- what students can read (autograder/hub/exposure.py) ----------------------------------


class Others(exposure.Reader):
    """Students are 'others' only (no group of theirs)."""

    def __init__(self):
        self.gids = set()


def checkout_with(tmp_path: Path) -> Path:
    """A checkout as a student could find it: source/ and solutions/ open, an answer
    pasted into notes/, a test file with none, and an answer in a closed folder."""
    top = tmp_path / "srv"
    (top / "source" / "01_value").mkdir(parents=True)
    shutil.copy(ROOT / "source" / "01_value" / "value.ipynb", top / "source" / "01_value")
    (top / "solutions").mkdir()
    for folder in ("notes", "private", "ok"):
        (top / folder).mkdir()
        (top / folder).chmod(0o755)
    solved = ROOT / "solutions" / "01_value" / "value.ipynb"
    shutil.copy(solved, top / "notes" / "copy.ipynb")
    shutil.copy(solved, top / "private" / "copy.ipynb")
    (top / "private").chmod(0o700)
    (top / "ok" / "notes.py").write_text("while stack:\n    return x\n")
    (top / "nbgrader_config.py").write_text("")
    return top


def test_a_readable_answer_and_answer_folders_are_one_line_each(tmp_path):
    top = checkout_with(tmp_path)
    regions = exposure.answer_regions([top / "source"])
    assert regions and all(lesson == "01_value" for lesson, _ in regions)
    found = exposure.readable_answers(top, Others(), regions)
    assert sorted(found) == sorted(
        [
            f"{top / 'notes' / 'copy.ipynb'} is readable by students and holds an answer "
            "(01_value)",
            f"{top / 'solutions'} is readable by students (the solved lessons)",
            f"{top / 'source'} is readable by students (the lessons' solutions and hidden tests)",
        ]
    )
    for folder in ("source", "solutions", "notes"):
        (top / folder).chmod(0o700)
    assert exposure.readable_answers(top, Others(), regions) == []


def test_a_group_a_student_is_in_opens_a_folder_to_them(tmp_path):
    top = checkout_with(tmp_path)
    for folder in ("source", "solutions", "notes"):
        (top / folder).chmod(0o750)
    regions = exposure.answer_regions([top / "source"])
    assert exposure.readable_answers(top, Others(), regions) == []
    student = Others()
    student.gids = {(top / "notes").stat().st_gid}
    assert len(exposure.readable_answers(top, student, regions)) == 3


def test_a_home_or_course_folder_open_to_others_is_one_line_each(tmp_path, good):
    checked = plan.load(good)
    homes = {u: tmp_path / "home" / u for u in checked.users()}
    for folder in homes.values():
        (folder / "fall").mkdir(parents=True)
        folder.chmod(0o700)
        (folder / "fall").chmod(0o700)
    for course in checked.courses:
        course.folder.chmod(0o700)
    assert exposure.private_folders(checked, homes.get) == []
    homes["ada"].chmod(0o755)
    (homes["grace"] / "fall").chmod(0o750)
    assert exposure.private_folders(checked, homes.get) == [
        f"ada's home {homes['ada']} is open to others (0755): chmod 0700 {homes['ada']}",
        f"grace's {homes['grace'] / 'fall'} is open to others (0750): "
        f"chmod 0700 {homes['grace'] / 'fall'}",
    ]
