import { expect, it } from "vitest";
import { renderApiDoc } from "../src/docs/api-doc";
import { ROUTES } from "../src/routes";

it("keeps docs/API.md generated from the route table", async () => {
  await expect(renderApiDoc(ROUTES)).toMatchFileSnapshot("../docs/API.md");
});
