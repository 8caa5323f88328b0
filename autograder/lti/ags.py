"""``export --to lti``: each student's score to the LMS's gradebook, through LTI 1.3
Assignment and Grade Services (AGS), with PyLTI1p3's ``ServiceConnector`` and
``AssignmentsGradesService`` (no launch needed: the launch's facts are the student's
``lti/launches/<student>.json``, launches.py).

The tool signs a JWT with its private key (``c.LTI.private_key_file``; the LMS knows its
public key, or fetches it from the hub's ``/hub/lti13/jwks``), trades it at the platform's
token URL (``c.LTI.token_url``) for an access token, then, for each assignment, finds its
line item in the LMS course (tag, resourceId or label equal to the assignment's name, or
``c.LTI.lineitems[assignment]``), creates it when the platform allows (the ``lineitem``
scope) and posts each student's score: ``scoreGiven`` (grades.csv's ``final_score``) of
``scoreMaximum``, ``activityProgress`` Completed, ``gradingProgress`` FullyGraded,
``timestamp``, ``userId`` the student's ``sub``. Only submissions are sent.

A student who never launched, a launch from another platform, a line item that is
missing: a problem (one line, exit code 1), that score not sent. The platform unreachable
or the token refused: GraderError (exit code 2), nothing more sent. ``exports/lti.csv``
lists what was sent, to which line item.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from traitlets import Dict, Unicode
from traitlets.config import Configurable

from ..errors import GraderError
from ..spreadsheet import write_csv
from .launches import LAUNCHES, LINEITEM_SCOPE, Launch, read_launches

SENT_HEADER = ["student", "assignment", "sub", "lineitem", "score", "max_score"]


class LTI(Configurable):
    """``c.LTI`` in nbgrader_config.py: the LMS platform grades go back to."""

    issuer = Unicode("", help="the platform's issuer (iss), as the hub's plan names it").tag(
        config=True
    )
    client_id = Unicode("", help="the tool's client_id on the platform").tag(config=True)
    token_url = Unicode("", help="the platform's OAuth 2 token endpoint").tag(config=True)
    private_key_file = Unicode(
        "", help="the tool's RSA private key (PEM); the LMS has its public key"
    ).tag(config=True)
    lineitems = Dict(
        {}, help='{assignment: "line item label"} where the label is not the assignment\'s'
    ).tag(config=True)

    def checked(self) -> LTI:
        for name in ("issuer", "client_id", "token_url", "private_key_file"):
            if not getattr(self, name):
                raise GraderError(f"c.LTI.{name} is not set in nbgrader_config.py (--to lti)")
        if not Path(self.private_key_file).is_file():
            raise GraderError(f"c.LTI.private_key_file: no file {self.private_key_file}")
        return self


def send_scores(course, out: Path, header: list[str], rows: list[list[str]]):
    """Send grades.csv's ``rows`` (of ``header``) to the platform; write ``out/lti.csv``.
    Return (its path, problems, notes)."""
    settings = LTI(config=course.config).checked()
    launches, problems = read_launches(course.root)
    col = {name: i for i, name in enumerate(header)}
    score = col["final_score"] if "final_score" in col else col["score"]
    sender = _Sender(settings)
    sent, unsent = [], 0
    for row in rows:
        student, assignment = row[col["student"]], row[col["assignment"]]
        if row[col["submitted"]] != "yes":
            unsent += 1
            continue
        launch = launches.get(student)
        why = _why_not(settings, student, launch)
        if why:
            problems.append(why)
            continue
        lineitem, why = sender.lineitem(launch, assignment, float(row[col["max_score"]]))
        if why:
            problems.append(why)
            continue
        sender.send(launch, lineitem, float(row[score]), float(row[col["max_score"]]))
        sent.append([student, assignment, launch.sub, lineitem, row[score], row[col["max_score"]]])
    notes = [f"{len(sent)} score(s) sent to {settings.issuer}"]
    if unsent:
        notes.append(f"{unsent} student-assignment(s) without a submission: nothing sent")
    path = write_csv(out / "lti.csv", SENT_HEADER, sent)
    return path, list(dict.fromkeys(problems)), notes


def _why_not(settings: LTI, student: str, launch: Launch | None) -> str:
    if launch is None:
        return (
            f"{student}: never launched the course from the LMS (no {LAUNCHES}/{student}.json)"
            "; score not sent"
        )
    if (launch.issuer, launch.client_id) != (settings.issuer, settings.client_id):
        return f"{student}: launched from {launch.issuer}, not c.LTI.issuer; score not sent"
    if not launch.can_score:
        return f"{student}: the LMS gave no AGS score scope at launch; score not sent"
    return ""


class _Sender:
    """One ServiceConnector (one access token) for the platform, line items looked up
    once per LMS course and assignment."""

    def __init__(self, settings: LTI):
        from pylti1p3.registration import Registration
        from pylti1p3.service_connector import ServiceConnector

        key = Path(settings.private_key_file).read_text()
        registration = (
            Registration()
            .set_issuer(settings.issuer)
            .set_client_id(settings.client_id)
            .set_auth_token_url(settings.token_url)
            .set_tool_private_key(key)
            .set_tool_public_key(public_pem(key))
        )
        self.settings = settings
        self.connector = ServiceConnector(registration)
        self.found: dict[tuple[str, str], tuple[str, str]] = {}

    def service(self, launch: Launch):
        from pylti1p3.assignments_grades import AssignmentsGradesService

        data = {"scope": list(launch.scopes), "lineitems": launch.lineitems}
        return AssignmentsGradesService(self.connector, data)

    def lineitem(self, launch: Launch, assignment: str, maximum: float) -> tuple[str, str]:
        """(the line item's URL, "") or ("", the problem)."""
        key = (launch.lineitems, assignment)
        if key not in self.found:
            self.found[key] = self._call(self._lineitem, launch, assignment, maximum)
        return self.found[key]

    def _lineitem(self, launch: Launch, assignment: str, maximum: float) -> tuple[str, str]:
        from pylti1p3.lineitem import LineItem

        if not launch.lineitems:
            return "", f"{launch.student}: the launch gave no line items URL; score not sent"
        label = self.settings.lineitems.get(assignment, assignment)
        ags = self.service(launch)
        if not ags.can_read_lineitem():
            return "", f"{launch.student}: the LMS gave no line item scope at launch; not sent"
        for item in ags.get_lineitems():
            if (
                assignment in (item.get("tag"), item.get("resourceId"))
                or item.get("label") == label
            ):
                return str(item["id"]), ""
        if LINEITEM_SCOPE not in launch.scopes:
            return "", (
                f"{assignment}: no line item {label!r} in LMS course {launch.context_label}"
                " and no scope to create it; add it in the LMS"
            )
        new = LineItem().set_label(label).set_score_maximum(maximum).set_tag(assignment)
        created = ags.find_or_create_lineitem(new.set_resource_id(assignment))
        return str(created.get_id()), ""

    def send(self, launch: Launch, lineitem: str, given: float, maximum: float) -> None:
        from pylti1p3.grade import Grade
        from pylti1p3.lineitem import LineItem

        grade = (
            Grade()
            .set_score_given(given)
            .set_score_maximum(maximum)
            .set_activity_progress("Completed")
            .set_grading_progress("FullyGraded")
            .set_timestamp(datetime.now(UTC).isoformat(timespec="milliseconds"))
            .set_user_id(launch.sub)
        )
        self._call(self.service(launch).put_grade, grade, LineItem({"id": lineitem}))

    def _call(self, fn, *args):
        """``fn(*args)``, its failures as one line naming the platform and what failed."""
        import requests
        from pylti1p3.exception import LtiException, LtiServiceException

        token_url = self.settings.token_url
        try:
            return fn(*args)
        except requests.ConnectionError as e:
            url = getattr(e.request, "url", None) or token_url
            raise GraderError(f"the LTI platform is unreachable: {url}") from None
        except LtiServiceException as e:
            r = e.response
            where = "token" if r.url == token_url else r.url
            refused = "refused the tool's token request" if where == "token" else "refused"
            raise GraderError(
                f"the LTI platform {refused} (HTTP {r.status_code}{_reason(r)}) at {r.url}"
            ) from None
        except LtiException as e:
            raise GraderError(f"LTI: {str(e)[:200]}") from None


def _reason(response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    text = body.get("error_description") or body.get("error") if isinstance(body, dict) else ""
    return f": {str(text)[:120]}" if text else ""


def public_pem(private_pem: str) -> str:
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    except ValueError:
        raise GraderError("c.LTI.private_key_file: not an unencrypted PEM private key") from None
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
