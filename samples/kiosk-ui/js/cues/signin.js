// Sign-in at the kiosk: the learner's email, then the 6-digit code the backend mails
// (`signin.request_code`, `signin.code`). A wrong code is told by the backend's reason.

import { el } from "../dom.js";
import { t } from "../i18n.js";

/** `view`: { step, email, emailInput, codeInput } (the inputs are the page's own, kept across
 *  renders); `actions`: { requestCode(), enterCode(), otherEmail() }. */
export function renderSignIn(view, actions) {
  const codeStep = view.step === "code";
  const form = codeStep
    ? el("form", { class: "signin-form", id: "code-form", on: { submit: (event) => { event.preventDefault(); actions.enterCode(); } } }, [
      el("p", { class: "muted", id: "code-sent", text: `${t("codeSentTo")} ${view.email}` }),
      view.codeInput,
      el("button", { class: "primary", id: "sign-in", text: t("signIn"), attrs: { type: "submit" } }),
      el("button", { class: "secondary", id: "other-email", text: t("otherEmail"), attrs: { type: "button" },
        on: { click: () => actions.otherEmail() } }),
    ])
    : el("form", { class: "signin-form", id: "email-form", on: { submit: (event) => { event.preventDefault(); actions.requestCode(); } } }, [
      el("p", { class: "muted", text: t("signInHelp") }),
      view.emailInput,
      el("button", { class: "primary", id: "send-code", text: t("sendCode"), attrs: { type: "submit" } }),
    ]);
  view.emailInput.placeholder = t("emailPlaceholder");
  view.codeInput.placeholder = t("codePlaceholder");
  return el("section", { class: "screen signin", id: "screen-signin" }, [el("h1", { text: t("signInTitle") }), form]);
}
