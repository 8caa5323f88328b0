"""LTI 1.3: students launch the course from the LMS, grades go back to its gradebook.

- ``launches``: what a launch tells the grader (``Launch``: the student's ``sub``, the
  platform, the LMS course, the AGS endpoints), made from a checked id_token and kept as
  ``<course>/lti/launches/<student>.json``; read back as untrusted input.
- ``authenticator`` (runs in the hub): ltiauthenticator's LTI13Authenticator, with the
  deployment checked, the LMS course mapped onto a course of the hub, the student's unix
  user made on their first launch, the launch recorded, and the tool's JWKS served.
- ``ags`` (runs in the grader): ``export --to lti``: each student's score through LTI
  Assignment and Grade Services (PyLTI1p3), to the launch's platform.
"""
