// Sign-in at the kiosk: the learner's email, then the 6-digit code the backend mails
// (`signin.request_code`, `signin.code`). A wrong code is told by the backend's reason.

import { el } from "../dom.js";
import { t } from "../i18n.js";

export function renderSignIn(app) {
  const codeStep = app.signIn.step === "code";
  const form = codeStep
    ? el("form", { class: "signin-form", id: "code-form", on: { submit: (event) => { event.preventDefault(); app.enterCode(); } } }, [
      el("p", { class: "muted", id: "code-sent", text: `${t("codeSentTo")} ${app.signIn.email}` }),
      app.codeInput,
      el("button", { class: "primary", id: "sign-in", text: t("signIn"), attrs: { type: "submit" } }),
      el("button", { class: "secondary", id: "other-email", text: t("otherEmail"), attrs: { type: "button" },
        on: { click: () => { app.signIn.step = "email"; app.render(); } } }),
    ])
    : el("form", { class: "signin-form", id: "email-form", on: { submit: (event) => { event.preventDefault(); app.requestCode(); } } }, [
      el("p", { class: "muted", text: t("signInHelp") }),
      app.emailInput,
      el("button", { class: "primary", id: "send-code", text: t("sendCode"), attrs: { type: "submit" } }),
    ]);
  app.emailInput.placeholder = t("emailPlaceholder");
  app.codeInput.placeholder = t("codePlaceholder");
  return el("section", { class: "screen signin", id: "screen-signin" }, [el("h1", { text: t("signInTitle") }), form]);
}
