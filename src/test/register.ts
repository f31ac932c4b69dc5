// `settle/register`: lets node run a user's TypeScript test files, e.g.
// `node --import settle/register --test test/*.test.ts`. It registers tsx (which settle depends on, so a
// project needs nothing else installed) for the whole process, ES modules and CommonJS alike. The CLI does
// not use it: there only the scenario files go through tsx.
import "tsx";
